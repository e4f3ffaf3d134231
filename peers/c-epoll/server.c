/* c-epoll: the five routes of crates/handlers in a single-threaded epoll server, as the
 * net-limits study's C server was, but correct: it reads each whole request (head and
 * content-length body), keeps connections alive (HTTP/1.1's default; pipelined requests are
 * answered in order), sets TCP_NODELAY and answers every route. SHA-256 is portable C written here
 * (no library, no SHA extensions), as the Rust builds' is portable Rust. /proxy calls the upstream
 * on one kept-alive blocking connection: the loop waits for it, as a single-threaded server does.
 *
 *   cc -O3 -o c-epoll server.c && ./c-epoll --port 0 --upstream http://127.0.0.1:9000
 *
 * prints `listening on http://ADDR` once bound. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_HEAD (64 * 1024)
#define MAX_BODY (1024 * 1024)
#define DEFAULT_ITERS 20000
#define MAX_ITERS 10000000UL

/* ---- SHA-256 (FIPS 180-4), portable ---- */

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t b[64]) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
    }
    h[0] += a; h[1] += bb; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

/* SHA-256 of a message shorter than 56 bytes (all this server hashes: the seed, a digest). */
static void sha256_short(const uint8_t *msg, size_t len, uint8_t out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint8_t block[64] = {0};
    memcpy(block, msg, len);
    block[len] = 0x80;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) block[63 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, block);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = h[i] >> 24; out[4 * i + 1] = h[i] >> 16; out[4 * i + 2] = h[i] >> 8; out[4 * i + 3] = h[i];
    }
}

static void hex(const uint8_t *b, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) { out[2 * i] = d[b[i] >> 4]; out[2 * i + 1] = d[b[i] & 15]; }
    out[2 * n] = 0;
}

/* state = "wasmlab"; repeat iters times: state = sha256(state); lowercase hex into out[65]. */
static void chained_sha256_hex(unsigned long iters, char out[65]) {
    static const uint8_t seed[] = "wasmlab";
    if (iters == 0) { hex(seed, 7, out); return; }
    uint8_t d[32];
    sha256_short(seed, 7, d);
    for (unsigned long i = 1; i < iters; i++) sha256_short(d, 32, d);
    hex(d, 32, out);
}

/* ---- growable byte buffers ---- */

typedef struct { char *p; size_t len, cap; } buf_t;

static void buf_reserve(buf_t *b, size_t more) {
    if (b->len + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more) cap *= 2;
    b->p = realloc(b->p, cap);
    if (!b->p) { perror("realloc"); exit(1); }
    b->cap = cap;
}

static void buf_put(buf_t *b, const void *data, size_t n) {
    buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void buf_consume(buf_t *b, size_t n) {
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

/* ---- the upstream (/proxy) ---- */

static char up_host[256], up_port[8], up_authority[300];
static int up_fd = -1;

static int upstream_connect(void) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(up_host, up_port, &hints, &res) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, 0);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) { int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
    return fd;
}

/* One GET on the kept connection; the body into `out`. 0 on success, else -1 with `why` set. */
static int upstream_get_once(const char *target, buf_t *out, const char **why) {
    if (up_fd < 0 && (up_fd = upstream_connect()) < 0) { *why = "cannot connect"; return -1; }
    char req[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nhost: %s\r\n\r\n", target, up_authority);
    if (n <= 0 || (size_t)n >= sizeof req) { *why = "target too long"; return -1; }
    if (send(up_fd, req, n, MSG_NOSIGNAL) != n) { *why = "send failed"; goto broken; }
    buf_t in = {0};
    char *end = NULL;
    while (!(end = in.len ? memmem(in.p, in.len, "\r\n\r\n", 4) : NULL)) {
        buf_reserve(&in, 4096);
        ssize_t r = recv(up_fd, in.p + in.len, in.cap - in.len, 0);
        if (r <= 0) { free(in.p); *why = "connection closed"; goto broken; }
        in.len += r;
    }
    size_t head = end - in.p + 4, clen = 0;
    int status = atoi(in.p + 9);
    for (char *l = strstr(in.p, "\r\n") + 2; l < in.p + head - 2; l = strstr(l, "\r\n") + 2)
        if (strncasecmp(l, "content-length:", 15) == 0) clen = strtoul(l + 15, NULL, 10);
    while (in.len < head + clen) {
        buf_reserve(&in, head + clen - in.len);
        ssize_t r = recv(up_fd, in.p + in.len, head + clen - in.len, 0);
        if (r <= 0) { free(in.p); *why = "connection closed"; goto broken; }
        in.len += r;
    }
    buf_put(out, in.p + head, clen);
    free(in.p);
    if (status != 200) { *why = "upstream status not 200"; return -1; }
    return 0;
broken:
    close(up_fd);
    up_fd = -1;
    return -1;
}

static int upstream_get(const char *target, buf_t *out, const char **why) {
    if (!up_host[0]) { *why = "no upstream configured"; return -1; }
    /* A kept connection the upstream closed meanwhile: one more try on a new one. */
    if (upstream_get_once(target, out, why) == 0) return 0;
    out->len = 0;
    return upstream_get_once(target, out, why);
}

/* ---- requests ---- */

static uint64_t counter;

static void respond(buf_t *w, int status, const char *type, const char *allow, const char *body, size_t len) {
    const char *reason = status == 200 ? "OK" : status == 400 ? "Bad Request" : status == 404 ? "Not Found"
                       : status == 405 ? "Method Not Allowed" : status == 413 ? "Content Too Large"
                       : status == 431 ? "Request Header Fields Too Large" : status == 501 ? "Not Implemented"
                       : "Bad Gateway";
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %zu\r\n%s%s%s\r\n",
                     status, reason, type, len, allow ? "allow: " : "", allow ? allow : "", allow ? "\r\n" : "");
    buf_put(w, head, n);
    buf_put(w, body, len);
}

#define TEXT "text/plain; charset=utf-8"
#define BYTES "application/octet-stream"

static void handle(const char *method, char *target, const char *body, size_t body_len, buf_t *w) {
    static const struct { const char *path, *method; } routes[] = {
        {"/", "GET"}, {"/compute", "GET"}, {"/state", "GET"}, {"/proxy", "GET"}, {"/echo", "POST"}};
    char *query = strchr(target, '?');
    size_t path_len = query ? (size_t)(query - target) : strlen(target);
    int route = -1;
    for (int i = 0; i < 5; i++)
        if (strlen(routes[i].path) == path_len && memcmp(routes[i].path, target, path_len) == 0) route = i;
    if (route < 0) { respond(w, 404, TEXT, NULL, "not found", 9); return; }
    if (strcmp(method, routes[route].method) != 0) {
        respond(w, 405, TEXT, routes[route].method, "method not allowed", 18);
        return;
    }
    char out[64];
    switch (route) {
    case 0: respond(w, 200, TEXT, NULL, "hello", 5); return;
    case 1: {
        unsigned long iters = DEFAULT_ITERS;
        for (char *p = query ? query + 1 : NULL; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
            if (strncmp(p, "iters", 5) != 0 || (p[5] != '=' && p[5] != '&' && p[5] != 0)) continue;
            const char *v = p[5] == '=' ? p + 6 : "";
            if (*v == '+') v++;
            size_t digits = strspn(v, "0123456789");
            iters = digits >= 1 && digits <= 10 && (v[digits] == 0 || v[digits] == '&') ? strtoul(v, NULL, 10) : ~0UL;
            if (iters > MAX_ITERS) {
                int n = snprintf(out, sizeof out, "iters must be an integer in 0..=%lu", MAX_ITERS);
                respond(w, 400, TEXT, NULL, out, n);
                return;
            }
            break;
        }
        char digest[65];
        chained_sha256_hex(iters, digest);
        respond(w, 200, TEXT, NULL, digest, iters == 0 ? 14 : 64);
        return;
    }
    case 2: {
        int n = snprintf(out, sizeof out, "%llu", (unsigned long long)++counter);
        respond(w, 200, TEXT, NULL, out, n);
        return;
    }
    case 3: {
        buf_t got = {0};
        const char *why = "";
        if (upstream_get(target, &got, &why) == 0) {
            respond(w, 200, BYTES, NULL, got.p ? got.p : "", got.len);
        } else {
            char msg[128];
            int n = snprintf(msg, sizeof msg, "upstream error: %s", why);
            respond(w, 502, TEXT, NULL, msg, n);
        }
        free(got.p);
        return;
    }
    case 4: respond(w, 200, BYTES, NULL, body, body_len); return;
    }
}

typedef struct { int fd; buf_t r, w; int closing; uint32_t events; } conn_t;

/* Answers every complete request in c->r. Returns 0, or -1 when the connection is to close once
 * its answers are written (a refused request, Connection: close, HTTP/1.0). */
static int serve_buffered(conn_t *c) {
    for (;;) {
        char *end = c->r.len ? memmem(c->r.p, c->r.len, "\r\n\r\n", 4) : NULL;
        if (!end) {
            if (c->r.len > MAX_HEAD) { respond(&c->w, 431, TEXT, NULL, "request head too large", 22); return -1; }
            return 0;
        }
        size_t head = end - c->r.p + 4;
        *end = 0; /* the head is a C string now */
        char *sp1 = strchr(c->r.p, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL, *eol = strstr(c->r.p, "\r\n");
        if (!sp1 || !sp2 || (eol && eol < sp2) || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
            respond(&c->w, 400, TEXT, NULL, "bad request", 11);
            return -1;
        }
        *sp1 = 0;
        *sp2 = 0;
        int keep = sp2[8] == '1'; /* HTTP/1.1 keeps alive unless told; 1.0 closes unless told */
        size_t clen = 0;
        int chunked = 0;
        for (char *l = eol ? eol + 2 : NULL; l && *l; l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL) {
            if (strncasecmp(l, "content-length:", 15) == 0) clen = strtoul(l + 15, NULL, 10);
            else if (strncasecmp(l, "transfer-encoding:", 18) == 0) chunked = 1;
            else if (strncasecmp(l, "connection:", 11) == 0) {
                const char *v = l + 11 + strspn(l + 11, " \t");
                if (strncasecmp(v, "close", 5) == 0) keep = 0;
                else if (strncasecmp(v, "keep-alive", 10) == 0) keep = 1;
            }
        }
        if (chunked) { respond(&c->w, 501, TEXT, NULL, "chunked request bodies are not served", 37); return -1; }
        if (clen > MAX_BODY) { respond(&c->w, 413, TEXT, NULL, "request body too large", 22); return -1; }
        if (c->r.len < head + clen) { *end = '\r'; *sp1 = ' '; *sp2 = ' '; return 0; } /* wait for the body */
        handle(c->r.p, sp1 + 1, c->r.p + head, clen, &c->w);
        buf_consume(&c->r, head + clen);
        if (!keep) return -1;
    }
}

static void drop(int ep, conn_t *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->r.p);
    free(c->w.p);
    free(c);
}

/* Writes what is pending; -1 on a broken connection. */
static int flush(conn_t *c) {
    while (c->w.len) {
        ssize_t n = send(c->fd, c->w.p, c->w.len, MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN ? 0 : -1;
        buf_consume(&c->w, n);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    int port = 8080;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { fprintf(stderr, "c-epoll: %s needs a value\n", argv[i]); return 2; }
        if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--host") == 0) host = argv[i + 1];
        else if (strcmp(argv[i], "--upstream") == 0) {
            const char *u = argv[i + 1];
            if (strncmp(u, "http://", 7) != 0 || sscanf(u + 7, "%255[^:/]:%7[0-9]", up_host, up_port) != 2) {
                fprintf(stderr, "c-epoll: --upstream %s: give http://HOST:PORT\n", u);
                return 2;
            }
            snprintf(up_authority, sizeof up_authority, "%s:%s", up_host, up_port);
        } else { fprintf(stderr, "c-epoll: unknown option %s (give --port, --host, --upstream)\n", argv[i]); return 2; }
    }
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) { fprintf(stderr, "c-epoll: --host %s: not an IPv4 address\n", host); return 2; }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 4096) != 0) { perror("c-epoll: bind"); return 2; }
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    char shown[INET_ADDRSTRLEN];
    printf("listening on http://%s:%d\n", inet_ntop(AF_INET, &addr.sin_addr, shown, sizeof shown), ntohs(addr.sin_port));
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; i++) {
            conn_t *c = events[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conn_t *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    nc->events = EPOLLIN | EPOLLRDHUP;
                    struct epoll_event cev = {.events = nc->events, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            if (events[i].events & (EPOLLERR | EPOLLHUP)) { drop(ep, c); continue; }
            if (events[i].events & EPOLLIN) {
                for (;;) {
                    buf_reserve(&c->r, 16384);
                    size_t room = c->r.cap - c->r.len;
                    ssize_t r = recv(c->fd, c->r.p + c->r.len, room, 0);
                    if (r > 0) {
                        c->r.len += r;
                        /* Less than asked: drained (level-triggered epoll says if more comes). */
                        if ((size_t)r < room) break;
                        continue;
                    }
                    if (r == 0 || errno != EAGAIN) c->closing = 2; /* the peer is gone */
                    break;
                }
                if (c->closing < 2 && serve_buffered(c) < 0) c->closing = 1;
            }
            if (c->closing == 2 || flush(c) < 0) { drop(ep, c); continue; }
            if (c->closing == 1 && c->w.len == 0) { drop(ep, c); continue; }
            /* Interest changes only when a write could not finish: no syscall per request. */
            uint32_t want = (c->w.len ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP;
            if (want != c->events) {
                c->events = want;
                struct epoll_event cev = {.events = want, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &cev);
            }
        }
    }
}
