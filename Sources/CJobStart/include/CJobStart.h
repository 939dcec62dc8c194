#ifndef CJOBSTART_H
#define CJOBSTART_H
/* Linked into the `job` executable only: a constructor makes SIGTERM and SIGINT exit 75 before anything else of
   the program runs (see job_start.c). Nothing to call. */
int cjobstart_linked(void);
#endif
