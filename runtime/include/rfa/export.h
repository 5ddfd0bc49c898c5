/* RFA_API marks what librfa exports: the public C and C++ API of these headers, nothing else.
 * The library is compiled with hidden visibility (GCC, Clang) or, on Windows, exports only what is
 * marked __declspec(dllexport) (rfa.dll), so the runtime's internals (rfa::gpu, rfa::ops, ...) and
 * its copy of volk stay inside it. The API exports functions and classes but no variables, so a
 * program using rfa.dll needs no __declspec(dllimport): calls go through the import library
 * (librfa.dll.a / rfa.lib), and the same headers serve the static library. */
#ifndef RFA_EXPORT_H
#define RFA_EXPORT_H

#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(RFA_BUILDING_LIBRARY)
#define RFA_API __declspec(dllexport)
#else
#define RFA_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define RFA_API __attribute__((visibility("default")))
#else
#define RFA_API
#endif

/* RFA_REFERENCE_API marks what librfa_reference (the CPU twin, a library of its own on top of
 * librfa) exports: reference_forward and rfa_model_reference_forward. Link rfa_reference for them. */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(RFA_BUILDING_REFERENCE)
#define RFA_REFERENCE_API __declspec(dllexport)
#else
#define RFA_REFERENCE_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define RFA_REFERENCE_API __attribute__((visibility("default")))
#else
#define RFA_REFERENCE_API
#endif

/* For the runtime's own definitions of a public class's nested implementation (Session::Impl,
 * Heatmap::Impl), which would otherwise inherit the exported class's visibility. */
#if defined(__GNUC__) && !defined(_WIN32)
#define RFA_HIDDEN __attribute__((visibility("hidden")))
#else
#define RFA_HIDDEN
#endif

/* Calls kept for one release after they moved; define RFA_NO_DEPRECATION_WARNINGS to silence them. */
#if defined(RFA_NO_DEPRECATION_WARNINGS) || !defined(__cplusplus)
#define RFA_DEPRECATED(why)
#else
#define RFA_DEPRECATED(why) [[deprecated(why)]]
#endif

#endif /* RFA_EXPORT_H */
