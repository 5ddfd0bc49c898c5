# rfa-viewer's tests: they run the real program (headless, and windowed under Xvfb). A Windows
# build's viewer is checked from its zip instead (package_zip, below: viewer_zoo_check's checks).
if(TARGET rfa-viewer AND NOT CMAKE_CROSSCOMPILING)
  add_executable(viewer_headless_check viewer_headless_check.cpp)
  target_link_libraries(viewer_headless_check PRIVATE rfa_internal rfa_reference)
  set(viewer_env
    "XDG_RUNTIME_DIR=${CMAKE_BINARY_DIR}/xdg"
    "RFA_VALIDATION=1"
    "VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
    "RFA_DEVICE=llvmpipe")
  # Screenshot pixels vs the CPU twin's weights; regimes table vs the model; validation silent.
  add_test(NAME viewer_headless
    COMMAND viewer_headless_check $<TARGET_FILE:rfa-viewer> ${CMAKE_BINARY_DIR}/test-tmp/viewer_headless)
  set_tests_properties(viewer_headless PROPERTIES ENVIRONMENT "${viewer_env}" TIMEOUT 600)
  # A text model: token labels on the map's axes when zoomed in, the hover readout, the hovered
  # tokens highlighted in the text panel.
  add_executable(viewer_text_check viewer_text_check.cpp)
  add_test(NAME viewer_text
    COMMAND viewer_text_check $<TARGET_FILE:rfa-viewer> ${CMAKE_SOURCE_DIR}/models/tiny-char-lm
            ${CMAKE_BINARY_DIR}/test-tmp/viewer_text)
  set_tests_properties(viewer_text PROPERTIES ENVIRONMENT "${viewer_env}" TIMEOUT 600)
  # Every zoo model as docs/viewer.md's screenshots are made (scripts/viewer-screenshots.sh), at
  # the default window size and a smaller one: every panel present, inside the window, apart, its
  # content fitting; no error; the tomography and the selected row of AFA and RT-RFA heads too.
  add_executable(viewer_zoo_check viewer_zoo_check.cpp)
  add_test(NAME viewer_zoo
    COMMAND viewer_zoo_check ${CMAKE_SOURCE_DIR} $<TARGET_FILE:rfa-viewer> ${CMAKE_BINARY_DIR}/test-tmp/viewer_zoo)
  set_tests_properties(viewer_zoo PROPERTIES ENVIRONMENT "${viewer_env}" TIMEOUT 900)
  # A real window under Xvfb: 30 frames with the live spiral streaming one position per frame,
  # validation on; exit 0 only when no validation message was seen and the window closed cleanly.
  find_program(XVFB_RUN xvfb-run)
  if(XVFB_RUN)
    set(win_dir ${CMAKE_BINARY_DIR}/test-tmp/viewer_window)
    add_test(NAME viewer_window_xvfb
      COMMAND sh -c "'$<TARGET_FILE:viewer_headless_check>' --make-model '${win_dir}' && '${XVFB_RUN}' -a '$<TARGET_FILE:rfa-viewer>' --model '${win_dir}/model' --frames 30 --rate 1 --print-timings")
    set_tests_properties(viewer_window_xvfb PROPERTIES ENVIRONMENT "${viewer_env}" TIMEOUT 600)
  endif()
endif()

# The attention tomography's C API, from C, on a model rfa-make-model writes (a fixture, so that no
# shell is needed: the same on Windows).
if(TARGET rfa-make-model)
  add_executable(c_api_diagnostics_test c_api_diagnostics_test.c)
  target_link_libraries(c_api_diagnostics_test PRIVATE rfa ${RFA_LIBM})
  set_target_properties(c_api_diagnostics_test PROPERTIES LINKER_LANGUAGE CXX)
  set(c_diag_dir ${CMAKE_BINARY_DIR}/test-tmp/c_api_diagnostics_model)
  add_test(NAME c_api_diagnostics_model
    COMMAND rfa-make-model --out ${c_diag_dir} --arch attention --heads 2 --d-e 16)
  set_tests_properties(c_api_diagnostics_model PROPERTIES FIXTURES_SETUP c_api_diagnostics_model TIMEOUT 120)
  add_test(NAME c_api_diagnostics_test COMMAND c_api_diagnostics_test ${c_diag_dir})
  set_tests_properties(c_api_diagnostics_test PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 300
    FIXTURES_REQUIRED c_api_diagnostics_model)
endif()

# The viewer's attention tomography panel: headless, validation on, the panel's numbers against
# Session::head_diagnostics while the stream grows, and its plots in the screenshot.
if(TARGET rfa-viewer AND TARGET viewer_headless_check)
  add_executable(viewer_diagnostics_check viewer_diagnostics_check.cpp)
  target_link_libraries(viewer_diagnostics_check PRIVATE rfa)
  target_include_directories(viewer_diagnostics_check PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
  add_test(NAME viewer_diagnostics
    COMMAND viewer_diagnostics_check $<TARGET_FILE:rfa-viewer> $<TARGET_FILE:viewer_headless_check>
            ${CMAKE_BINARY_DIR}/test-tmp/viewer_diagnostics)
  set_tests_properties(viewer_diagnostics PROPERTIES ENVIRONMENT "${viewer_env}" TIMEOUT 600)
endif()

# The SDK as a user gets it (tests/install_test.sh): the package (cpack: .tar.gz and .deb) unpacked
# into a fresh folder, and `cmake --install` into a temporary prefix; against them only, the
# demo, the viewer's headless check (viewer_zoo_check on one model), the examples built with
# find_package and pkg-config and run, the installed rfa-run, and the Python package installed
# with pip into a venv of Debian's python3, loading the installed librfa.so.
if(RFA_BUILD_TOOLS AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME install_examples
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install_test.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
            ${CMAKE_BINARY_DIR}/test-tmp/install)
  set(install_env "${RFA_TEST_ENV}")
  if(TARGET viewer_zoo_check)
    list(APPEND install_env "RFA_VIEWER_CHECK=$<TARGET_FILE:viewer_zoo_check>")
  endif()
  set_tests_properties(install_examples PROPERTIES ENVIRONMENT "${install_env}" TIMEOUT 900)
endif()
# The Windows zip (cross build, under the emulator's Wine): unpacked into a fresh folder, then with
# nothing else on the path the demo, the viewer's headless check and the examples built with the
# MinGW toolchain against it (find_package) and run (tests/install_test.sh --windows).
if(WIN32 AND CMAKE_CROSSCOMPILING AND RFA_BUILD_TOOLS)
  add_test(NAME package_zip
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install_test.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
            ${CMAKE_BINARY_DIR}/test-tmp/package --windows)
  set_tests_properties(package_zip PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 900)
endif()

# The Python package's suite (python/tests) with Debian's python3, numpy and pytest, against the
# librfa.so of this build: outputs equal rfa-run --dump, streaming equals prefill, errors carry the
# runtime's message, checkpoint conversion round-trips.
if(NOT CMAKE_CROSSCOMPILING)  # the host's python3 cannot load a cross-built library
add_test(NAME python_suite
  COMMAND /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider ${CMAKE_SOURCE_DIR}/python/tests)
set_tests_properties(python_suite PROPERTIES TIMEOUT 900 ENVIRONMENT
  "${RFA_TEST_ENV};RFA_LIBRARY=$<TARGET_FILE:rfa_shared>;PYTHONPATH=${CMAKE_SOURCE_DIR}/python;PYTHONDONTWRITEBYTECODE=1")
endif()

# rfa-run's progress line: only on a terminal (script(1) from bsdutils gives the test one).
find_program(SCRIPT_EXECUTABLE script)
if(SCRIPT_EXECUTABLE AND RFA_BUILD_TOOLS AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME rfa_run_progress
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/progress_test.sh $<TARGET_FILE:rfa-run>
            ${CMAKE_SOURCE_DIR}/models/tiny-char-lm ${CMAKE_BINARY_DIR}/test-tmp/progress)
  set_tests_properties(rfa_run_progress PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 300)
endif()

# The repository's own files: no absolute paths of the machine they were made on, every docs/
# reference and section reference resolves, no private include outside runtime/src, tests/ and
# tools/rfa-bench/. The self-test proves each check catches its case.
# The shared library exports the public API only and does not link the Vulkan loader (librfa.so:
# nm -D and readelf -d; rfa.dll: its export table and imports through the cross objdump).
# librfa carries no CPU twin and reads no environment; librfa_reference (the twin) exports its
# public face only and sits on top of librfa (library_exports_reference).
if(WIN32)
  find_program(RFA_OBJDUMP NAMES x86_64-w64-mingw32-objdump objdump)
  add_test(NAME library_exports COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py
           $<TARGET_FILE:rfa_shared> --objdump ${RFA_OBJDUMP})
  add_test(NAME library_exports_reference COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py
           $<TARGET_FILE:rfa_reference_shared> --objdump ${RFA_OBJDUMP} --reference)
else()
  add_test(NAME library_exports COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py
           $<TARGET_FILE:rfa_shared>)
  add_test(NAME library_exports_reference COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py
           $<TARGET_FILE:rfa_reference_shared> --reference)
endif()
add_test(NAME library_exports_selftest COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py --self-test)
set_tests_properties(library_exports library_exports_reference library_exports_selftest PROPERTIES
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 120)

add_test(NAME repo_checks COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_repo.py ${CMAKE_SOURCE_DIR})
add_test(NAME repo_checks_selftest COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_repo.py --self-test)
set_tests_properties(repo_checks repo_checks_selftest PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 120)

# The documentation's snippets (```c snippet, ```cpp snippet, ```python snippet in README.md and
# docs/*.md), compiled against the public headers and this build's librfa.so and run from the
# source folder, validation on: what a newcomer copies works on the bundled models.
if(NOT CMAKE_CROSSCOMPILING)  # compiles the snippets with the host's compilers against the library
add_test(NAME doc_snippets
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/doc_snippets.py ${CMAKE_SOURCE_DIR}
          $<TARGET_FILE_DIR:rfa_shared> ${CMAKE_BINARY_DIR}/test-tmp/doc_snippets)
set_tests_properties(doc_snippets PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 900)
endif()
add_test(NAME doc_snippets_selftest COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/doc_snippets.py --self-test)
set_tests_properties(doc_snippets_selftest PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 60)

# The viewer opens the Vulkan loader at run time, as librfa: rfa-viewer needs no libvulkan.so.1
# (readelf -d) / rfa-viewer.exe imports no vulkan-1.dll (the cross objdump).
if(TARGET rfa-viewer)
  if(WIN32)
    add_test(NAME viewer_links_no_loader COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py
             $<TARGET_FILE:rfa-viewer> --program --objdump ${RFA_OBJDUMP})
  else()
    add_test(NAME viewer_links_no_loader COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_exports.py
             $<TARGET_FILE:rfa-viewer> --program)
  endif()
  set_tests_properties(viewer_links_no_loader PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 120)
endif()

# Under Wine (the Windows build's emulator), vulkan-1.dll switched off: rfa-run names the missing
# loader (a machine without Vulkan). Linux covers the message in test_context.
if(WIN32 AND CMAKE_CROSSCOMPILING AND RFA_BUILD_TOOLS)
  add_test(NAME rfa_run_no_vulkan_loader COMMAND rfa-run --list-devices)
  set_tests_properties(rfa_run_no_vulkan_loader PROPERTIES ENVIRONMENT "WINEDLLOVERRIDES=vulkan-1=d"
    PASS_REGULAR_EXPRESSION "no Vulkan loader: vulkan-1.dll not found" TIMEOUT 120)
  # The viewer too: it starts, and names the missing loader (exit 5) instead of failing to load.
  if(TARGET rfa-viewer)
    add_test(NAME viewer_no_vulkan_loader COMMAND rfa-viewer --headless --frames 1)
    set_tests_properties(viewer_no_vulkan_loader PROPERTIES ENVIRONMENT "WINEDLLOVERRIDES=vulkan-1=d"
      PASS_REGULAR_EXPRESSION "rfa-viewer: no Vulkan loader: .*vulkan-1.dll not found" TIMEOUT 120)
  endif()
endif()

# The examples built in-tree (RFA_BUILD_EXAMPLES: cross builds), each on the model it is made for.
if(TARGET hello_rfa_cpp)
  foreach(kind "" _static)
    add_test(NAME example_cpp${kind} COMMAND hello_rfa_cpp${kind} ${CMAKE_SOURCE_DIR}/models/spiral-filter)
    add_test(NAME example_c${kind} COMMAND hello_rfa_c${kind} ${CMAKE_SOURCE_DIR}/models/tiny-char-lm)
    set_tests_properties(example_cpp${kind} example_c${kind} PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 300)
  endforeach()
  add_test(NAME example_twin COMMAND check_with_twin ${CMAKE_SOURCE_DIR}/models/spiral-filter)
  set_tests_properties(example_twin PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 300)
endif()

# rfa-bench attention --stats on a tiny shape: every benchmark line lists the kernels its run
# dispatched with their SPIR-V counts and the driver's statistics (or the note that it has none).
if(TARGET rfa-bench AND NOT CMAKE_CROSSCOMPILING)  # the host's python3 drives the program
  add_test(NAME bench_stats
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/bench_stats_test.py $<TARGET_FILE:rfa-bench>)
  set_tests_properties(bench_stats PROPERTIES ENVIRONMENT "${RFA_TEST_ENV};PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)
endif()

# scripts/gpu-report.sh --quick: the GPU report's table, kernel statistics and test rows on this
# machine's device, the PyTorch columns marked n/a with a note where torch has no CUDA.
if(TARGET rfa-bench AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME gpu_report_quick
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/gpu_report_test.py ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
            ${CMAKE_BINARY_DIR}/test-tmp/gpu_report)
  set_tests_properties(gpu_report_quick PROPERTIES ENVIRONMENT "${RFA_TEST_ENV};PYTHONDONTWRITEBYTECODE=1" TIMEOUT 1200)
endif()

# CI's short soak (issue 33; rfa-bench stream --soak is the long one): memory flat over a stream
# after warm-up, device memory unchanged (tests/soak_check.cpp). Judges memory, never time.
add_executable(soak_check soak_check.cpp ${CMAKE_SOURCE_DIR}/tools/rfa-bench/process_stats.cpp)
target_link_libraries(soak_check PRIVATE rfa_internal)
target_include_directories(soak_check PRIVATE ${CMAKE_SOURCE_DIR}/tools/rfa-bench)
target_compile_definitions(soak_check PRIVATE RFA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME soak_check COMMAND soak_check)
add_test(NAME soak_check_selftest COMMAND soak_check --self-test --steps 4000)  # the check bites
set_tests_properties(soak_check soak_check_selftest PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 900)
