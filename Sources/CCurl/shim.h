#ifndef CLARION_CCURL_SHIM_H
#define CLARION_CCURL_SHIM_H
#include <curl/curl.h>

/* Typed wrappers for libcurl's variadic calls, which Swift cannot call. */
static inline CURLcode clarion_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode clarion_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode clarion_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode clarion_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode clarion_curl_setopt_write_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb);
}
static inline CURLcode clarion_curl_setopt_header_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb);
}
static inline CURLcode clarion_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
/* A CA bundle from memory (CURLOPT_CAINFO_BLOB, libcurl 7.77+); libcurl copies the bytes. */
static inline CURLcode clarion_curl_setopt_cainfo_blob(CURL *h, const void *data, size_t len) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = len;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
}
/* The default CA bundle path libcurl was built with (may be NULL). */
static inline const char *clarion_curl_default_cainfo(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_TENTH);
    return info ? info->cainfo : 0;
}
#endif
