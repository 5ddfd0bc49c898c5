# rfa-viewer's tests: they run the real program (headless, and windowed under Xvfb).
if(TARGET rfa-viewer)
  add_executable(viewer_headless_check viewer_headless_check.cpp)
  target_link_libraries(viewer_headless_check PRIVATE rfa)
  target_include_directories(viewer_headless_check PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
  set(viewer_env
    "XDG_RUNTIME_DIR=${CMAKE_BINARY_DIR}/xdg"
    "RFA_VALIDATION=1"
    "VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
    "RFA_DEVICE=llvmpipe")
  # Screenshot pixels vs the CPU twin's weights; regimes table vs the model; validation silent.
  add_test(NAME viewer_headless
    COMMAND viewer_headless_check $<TARGET_FILE:rfa-viewer> ${CMAKE_BINARY_DIR}/test-tmp/viewer_headless)
  set_tests_properties(viewer_headless PROPERTIES ENVIRONMENT "${viewer_env}" TIMEOUT 600)
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

# The attention tomography's C API, from C, on a model rfa-make-model writes.
if(TARGET rfa-make-model)
  add_executable(c_api_diagnostics_test c_api_diagnostics_test.c)
  target_link_libraries(c_api_diagnostics_test PRIVATE rfa m)
  set_target_properties(c_api_diagnostics_test PROPERTIES LINKER_LANGUAGE CXX)
  set(c_diag_dir ${CMAKE_BINARY_DIR}/test-tmp/c_api_diagnostics_model)
  add_test(NAME c_api_diagnostics_test
    COMMAND sh -c "'$<TARGET_FILE:rfa-make-model>' --out '${c_diag_dir}' --arch attention --heads 2 --d-e 16 > /dev/null && '$<TARGET_FILE:c_api_diagnostics_test>' '${c_diag_dir}'")
  set_tests_properties(c_api_diagnostics_test PROPERTIES ENVIRONMENT "${RFA_TEST_ENV}" TIMEOUT 300)
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
