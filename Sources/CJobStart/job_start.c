#include "CJobStart.h"
#include "CShims.h"

/* Runs before main and, with priority 101, before every initializer of default priority linked into the same
   executable (in the installed --static-swift-stdlib build: the Swift runtime's and Foundation's), so that a
   SIGTERM or SIGINT in the first milliseconds exits 75 ("retry next pass") instead of killing the process (143).
   Only the dynamic loader's own work before it remains uncovered. */
__attribute__((constructor(101))) static void install_early_exit_handlers(void) {
    shim_install_early_exit_handlers();
}

int cjobstart_linked(void) { return 1; }
