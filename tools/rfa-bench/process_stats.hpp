// The process's memory and the calling thread's CPU time, per OS (getrusage, /proc/self/statm and
// clock_gettime on Linux; GetProcessMemoryInfo and GetThreadTimes on Windows). 0 where unknown.
#pragma once

namespace rfa::bench {

double peak_rss_mib();   // peak resident set (Windows: peak working set)
double rss_mib();        // resident set now (Windows: working set)
double thread_cpu_ms();  // CPU time of the calling thread
// The C heap (glibc's mallinfo2, every arena): bytes handed out and not freed, and bytes the heap
// holds from the system (in use + free chunks kept for reuse). 0 where unknown (other C libraries).
double heap_in_use_mib();
double heap_held_mib();

}  // namespace rfa::bench
