/// libcurl (HTTP client: token pool, relay, Syncthing): the functions `job` calls, bound on first use.
#include "lazy_library.h"

#include <stdarg.h>
#include <curl/curl.h>

#define LAZY_LIBRARY lazy_curl
#define CURL_FUNCTIONS(F, V, M)                                                                                   \
    F(CURLcode, curl_global_init, (long flags), (flags))                                                          \
    F(curl_version_info_data *, curl_version_info, (CURLversion age), (age))                                      \
    F(CURL *, curl_easy_init, (void), ())                                                                         \
    V(void, curl_easy_cleanup, (CURL *curl), (curl))                                                              \
    V(void, curl_easy_reset, (CURL *curl), (curl))                                                                \
    F(CURLcode, curl_easy_perform, (CURL *curl), (curl))                                                          \
    F(const char *, curl_easy_strerror, (CURLcode code), (code))                                                  \
    M(curl_easy_setopt)                                                                                           \
    M(curl_easy_getinfo)                                                                                          \
    F(CURLM *, curl_multi_init, (void), ())                                                                       \
    F(CURLMcode, curl_multi_cleanup, (CURLM *multi), (multi))                                                     \
    F(CURLMcode, curl_multi_add_handle, (CURLM *multi, CURL *curl), (multi, curl))                                \
    F(CURLMcode, curl_multi_remove_handle, (CURLM *multi, CURL *curl), (multi, curl))                             \
    F(CURLMcode, curl_multi_perform, (CURLM *multi, int *running), (multi, running))                              \
    F(CURLMcode, curl_multi_poll, (CURLM *multi, struct curl_waitfd extra_fds[], unsigned int extra_nfds,          \
                                   int timeout_ms, int *ret), (multi, extra_fds, extra_nfds, timeout_ms, ret))    \
    F(CURLMsg *, curl_multi_info_read, (CURLM *multi, int *msgs_in_queue), (multi, msgs_in_queue))                \
    M(curl_multi_setopt)                                                                                          \
    F(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *data), (list, data))          \
    V(void, curl_slist_free_all, (struct curl_slist *list), (list))

LAZY_DEFINE_LIBRARY(lazy_curl, "libcurl.so.4", "libcurl4", CURL_FUNCTIONS)

/* The variadic setters take exactly one argument after the option, whose type the option's number range
   names (CURLOPTTYPE_*): read it as that type and pass it on, as libcurl itself reads it. */

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...) {
    CURLcode (*real)(CURL *, CURLoption, ...) = LAZY_REAL(curl_easy_setopt);
    va_list arguments;
    va_start(arguments, option);
    CURLcode result;
    if (option < CURLOPTTYPE_OBJECTPOINT) result = real(curl, option, va_arg(arguments, long));
    else if (option < CURLOPTTYPE_FUNCTIONPOINT) result = real(curl, option, va_arg(arguments, void *));
    else if (option < CURLOPTTYPE_OFF_T) result = real(curl, option, va_arg(arguments, void (*)(void)));
    else if (option < CURLOPTTYPE_BLOB) result = real(curl, option, va_arg(arguments, curl_off_t));
    else result = real(curl, option, va_arg(arguments, struct curl_blob *));
    va_end(arguments);
    return result;
}

CURLMcode curl_multi_setopt(CURLM *multi, CURLMoption option, ...) {
    CURLMcode (*real)(CURLM *, CURLMoption, ...) = LAZY_REAL(curl_multi_setopt);
    va_list arguments;
    va_start(arguments, option);
    CURLMcode result;
    if (option < CURLOPTTYPE_OBJECTPOINT) result = real(multi, option, va_arg(arguments, long));
    else if (option < CURLOPTTYPE_FUNCTIONPOINT) result = real(multi, option, va_arg(arguments, void *));
    else if (option < CURLOPTTYPE_OFF_T) result = real(multi, option, va_arg(arguments, void (*)(void)));
    else result = real(multi, option, va_arg(arguments, curl_off_t));
    va_end(arguments);
    return result;
}

/* Every CURLINFO_* takes one pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...) {
    CURLcode (*real)(CURL *, CURLINFO, ...) = LAZY_REAL(curl_easy_getinfo);
    va_list arguments;
    va_start(arguments, info);
    CURLcode result = real(curl, info, va_arg(arguments, void *));
    va_end(arguments);
    return result;
}
