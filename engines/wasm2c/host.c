/*
 * wasmlab's host for a WASI preview 1 command translated by wasm2c: `main`, and the part of
 * `wasi_snapshot_preview1` that the libsodium programs import (see README.md), written for this
 * runner. The runner (src/main.rs) checks a module's imports against HOST_IMPORTS before it
 * compiles anything, so a module that needs any other import is refused with its name.
 *
 * Compiled together with the wasm2c output (module.c, whose module name is `m`) and wabt's
 * wasm-rt-impl.c, with HOST_IMPORTS_WASI defined to 1 when the module imports anything (then
 * Z_m_instantiate takes the WASI instance). Including module.h makes the compiler check every
 * import's C signature here against the one wasm2c declared for the module.
 *
 * The WASI host:
 *   - fd 0: an empty stdin (reads return end of file); fds 1 and 2: the process's stdout and
 *     stderr; fd 3: the current directory preopened as ".";
 *   - path_open resolves beneath its directory fd (openat2 with RESOLVE_BENEATH; where the kernel
 *     lacks openat2, absolute paths and ".." components are refused before openat);
 *   - arguments: the ones the runner passes; no environment variables;
 *   - poll_oneoff: clock subscriptions (the program sleeps until the earliest one); an fd
 *     subscription is answered at once with the error `notsup`.
 *
 * argv: PROG TIMES_FILE SPAWN_NS ARG0 [ARG...]
 *   TIMES_FILE   where to write "INSTANTIATE_NS EXECUTE_NS" when the program ends: the runner reads
 *                them back and writes the phases file (the protocol's, in one place);
 *   SPAWN_NS     CLOCK_MONOTONIC when the runner spawned this process: instantiate runs from it;
 *   ARG0...      the program's WASI arguments.
 * Exit status: the program's proc_exit code, or 0 when _start returns (the times are written in
 * both cases); on a trap, a message on stderr, exit status 70, no times.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "module.h"
#include "wasm-rt-impl.h"

#if defined(SYS_openat2)
#include <linux/openat2.h>
#endif

#define EXIT_TRAP 70

/* ---------------------------------------------------------------- WASI constants (preview 1) */

enum {
  E_SUCCESS = 0, E_2BIG = 1, E_ACCES = 2, E_AGAIN = 6, E_BADF = 8, E_BUSY = 10, E_EXIST = 20,
  E_FAULT = 21, E_FBIG = 22, E_ILSEQ = 25, E_INTR = 27, E_INVAL = 28, E_IO = 29, E_ISDIR = 31,
  E_LOOP = 32, E_MFILE = 33, E_NAMETOOLONG = 37, E_NFILE = 41, E_NODEV = 43, E_NOENT = 44,
  E_NOMEM = 48, E_NOSPC = 51, E_NOSYS = 52, E_NOTDIR = 54, E_NOTEMPTY = 55, E_NOTSUP = 58,
  E_NOTTY = 59, E_NXIO = 60, E_OVERFLOW = 61, E_PERM = 63, E_PIPE = 64, E_ROFS = 69,
  E_SPIPE = 70, E_TXTBSY = 74, E_XDEV = 75, E_NOTCAPABLE = 76,
};

enum { FT_UNKNOWN = 0, FT_BLOCK = 1, FT_CHAR = 2, FT_DIR = 3, FT_REG = 4, FT_SOCK_STREAM = 6,
       FT_SYMLINK = 7 };

enum { FDF_APPEND = 1, FDF_DSYNC = 2, FDF_NONBLOCK = 4, FDF_RSYNC = 8, FDF_SYNC = 16 };
enum { OF_CREAT = 1, OF_DIRECTORY = 2, OF_EXCL = 4, OF_TRUNC = 8 };
enum { LOOKUP_SYMLINK_FOLLOW = 1 };

/* Rights bits. */
#define R_FD_DATASYNC (1ull << 0)
#define R_FD_READ (1ull << 1)
#define R_FD_SEEK (1ull << 2)
#define R_FD_TELL (1ull << 5)
#define R_FD_WRITE (1ull << 6)
#define R_FD_ALLOCATE (1ull << 8)
#define R_FD_READDIR (1ull << 14)
#define R_FD_FILESTAT_SET_SIZE (1ull << 22)
#define R_ALL ((1ull << 30) - 1)

/* ------------------------------------------------------------------------------ the host state */

struct Z_wasi_snapshot_preview1_instance_t {
  wasm_rt_memory_t* memory;
};

enum fd_kind { FD_FREE = 0, FD_EMPTY_STDIN, FD_HOST };

struct fd_entry {
  enum fd_kind kind;
  int host;            /* the host descriptor (FD_HOST) */
  const char* preopen; /* the name it is preopened as, or NULL */
};

#define MAX_FDS 128
static struct fd_entry fds[MAX_FDS];

static int wasi_argc;
static char** wasi_argv;

static const char* times_path;
static unsigned long long spawn_ns, ready_ns;

static unsigned long long monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Writes the times of a program that ends now for the runner. */
static void write_times(void) {
  unsigned long long end_ns = monotonic_ns();
  FILE* f = fopen(times_path, "w");
  if (!f || fprintf(f, "%llu %llu\n", ready_ns - spawn_ns, end_ns - ready_ns) < 0 ||
      fclose(f) != 0) {
    fprintf(stderr, "wasm2c host: cannot write %s: %s\n", times_path, strerror(errno));
    exit(EXIT_TRAP);
  }
}

/* --------------------------------------------------------------------------------- helpers */

static u32 errno_to_wasi(int e) {
  switch (e) {
    case 0: return E_SUCCESS;
    case E2BIG: return E_2BIG;
    case EACCES: return E_ACCES;
    case EAGAIN: return E_AGAIN;
    case EBADF: return E_BADF;
    case EBUSY: return E_BUSY;
    case EEXIST: return E_EXIST;
    case EFAULT: return E_FAULT;
    case EFBIG: return E_FBIG;
    case EILSEQ: return E_ILSEQ;
    case EINTR: return E_INTR;
    case EINVAL: return E_INVAL;
    case EISDIR: return E_ISDIR;
    case ELOOP: return E_LOOP;
    case EMFILE: return E_MFILE;
    case ENAMETOOLONG: return E_NAMETOOLONG;
    case ENFILE: return E_NFILE;
    case ENODEV: return E_NODEV;
    case ENOENT: return E_NOENT;
    case ENOMEM: return E_NOMEM;
    case ENOSPC: return E_NOSPC;
    case ENOSYS: return E_NOSYS;
    case ENOTDIR: return E_NOTDIR;
    case ENOTEMPTY: return E_NOTEMPTY;
    case EOPNOTSUPP: return E_NOTSUP;
    case ENOTTY: return E_NOTTY;
    case ENXIO: return E_NXIO;
    case EOVERFLOW: return E_OVERFLOW;
    case EPERM: return E_PERM;
    case EPIPE: return E_PIPE;
    case EROFS: return E_ROFS;
    case ESPIPE: return E_SPIPE;
    case ETXTBSY: return E_TXTBSY;
    case EXDEV: return E_XDEV;
    default: return E_IO;
  }
}

/* The address of [offset, offset + len) in linear memory, or NULL if it is not all inside. */
static u8* mem(struct Z_wasi_snapshot_preview1_instance_t* w, u64 offset, u64 len) {
  u64 size = w->memory->size;
  if (offset > size || len > size - offset) return NULL;
  return w->memory->data + offset;
}

/* Little-endian stores and loads (wasm2c keeps linear memory in host order; x86-64 and aarch64
 * hosts are little-endian). */
static int store_u32(struct Z_wasi_snapshot_preview1_instance_t* w, u32 at, u32 v) {
  u8* p = mem(w, at, 4);
  if (!p) return 0;
  memcpy(p, &v, 4);
  return 1;
}

static int store_u64(struct Z_wasi_snapshot_preview1_instance_t* w, u32 at, u64 v) {
  u8* p = mem(w, at, 8);
  if (!p) return 0;
  memcpy(p, &v, 8);
  return 1;
}

static u32 load_u32(const u8* p) {
  u32 v;
  memcpy(&v, p, 4);
  return v;
}

static u64 load_u64(const u8* p) {
  u64 v;
  memcpy(&v, p, 8);
  return v;
}

static struct fd_entry* entry(u32 fd) {
  if (fd >= MAX_FDS || fds[fd].kind == FD_FREE) return NULL;
  return &fds[fd];
}

/* Turns a WASI iovec array (iovs_len pairs of u32 buf, u32 len) into host iovecs; returns a WASI
 * errno. *out is malloc'ed. */
static u32 host_iovecs(struct Z_wasi_snapshot_preview1_instance_t* w, u32 iovs, u32 iovs_len,
                       struct iovec** out) {
  if (iovs_len > IOV_MAX) return E_INVAL;
  const u8* p = mem(w, iovs, (u64)iovs_len * 8);
  if (!p) return E_FAULT;
  struct iovec* v = malloc(sizeof(struct iovec) * (iovs_len ? iovs_len : 1));
  if (!v) return E_NOMEM;
  for (u32 i = 0; i < iovs_len; i++) {
    u32 buf = load_u32(p + 8 * i), len = load_u32(p + 8 * i + 4);
    u8* b = mem(w, buf, len);
    if (!b) {
      free(v);
      return E_FAULT;
    }
    v[i].iov_base = b;
    v[i].iov_len = len;
  }
  *out = v;
  return E_SUCCESS;
}

/* -------------------------------------------------------------------------- args and environ */

u32 Z_wasi_snapshot_preview1Z_args_sizes_get(struct Z_wasi_snapshot_preview1_instance_t* w,
                                             u32 argc_at, u32 size_at) {
  u64 size = 0;
  for (int i = 0; i < wasi_argc; i++) size += strlen(wasi_argv[i]) + 1;
  if (size > UINT32_MAX) return E_2BIG;
  if (!store_u32(w, argc_at, (u32)wasi_argc) || !store_u32(w, size_at, (u32)size)) return E_FAULT;
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_args_get(struct Z_wasi_snapshot_preview1_instance_t* w, u32 argv_at,
                                       u32 buf_at) {
  u32 at = buf_at;
  for (int i = 0; i < wasi_argc; i++) {
    size_t n = strlen(wasi_argv[i]) + 1;
    u8* dst = mem(w, at, n);
    if (!dst || !store_u32(w, argv_at + 4 * (u32)i, at)) return E_FAULT;
    memcpy(dst, wasi_argv[i], n);
    at += (u32)n;
  }
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_environ_sizes_get(struct Z_wasi_snapshot_preview1_instance_t* w,
                                                u32 count_at, u32 size_at) {
  if (!store_u32(w, count_at, 0) || !store_u32(w, size_at, 0)) return E_FAULT;
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_environ_get(struct Z_wasi_snapshot_preview1_instance_t* w,
                                          u32 environ_at, u32 buf_at) {
  (void)w, (void)environ_at, (void)buf_at;
  return E_SUCCESS;
}

/* ----------------------------------------------------------------------- clocks and randomness */

static int host_clock(u32 id, clockid_t* out) {
  switch (id) {
    case 0: *out = CLOCK_REALTIME; return 1;
    case 1: *out = CLOCK_MONOTONIC; return 1;
    case 2: *out = CLOCK_PROCESS_CPUTIME_ID; return 1;
    case 3: *out = CLOCK_THREAD_CPUTIME_ID; return 1;
    default: return 0;
  }
}

u32 Z_wasi_snapshot_preview1Z_clock_time_get(struct Z_wasi_snapshot_preview1_instance_t* w, u32 id,
                                             u64 precision, u32 time_at) {
  (void)precision;
  clockid_t clock;
  struct timespec ts;
  if (!host_clock(id, &clock)) return E_INVAL;
  if (clock_gettime(clock, &ts) != 0) return errno_to_wasi(errno);
  if (!store_u64(w, time_at, (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec)) return E_FAULT;
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_clock_res_get(struct Z_wasi_snapshot_preview1_instance_t* w, u32 id,
                                            u32 res_at) {
  clockid_t clock;
  struct timespec ts;
  if (!host_clock(id, &clock)) return E_INVAL;
  if (clock_getres(clock, &ts) != 0) return errno_to_wasi(errno);
  if (!store_u64(w, res_at, (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec)) return E_FAULT;
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_random_get(struct Z_wasi_snapshot_preview1_instance_t* w, u32 buf,
                                         u32 len) {
  u8* p = mem(w, buf, len);
  if (!p) return E_FAULT;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_to_wasi(errno);
    }
    p += n;
    len -= (u32)n;
  }
  return E_SUCCESS;
}

/* -------------------------------------------------------------------------------------- exit */

void Z_wasi_snapshot_preview1Z_proc_exit(struct Z_wasi_snapshot_preview1_instance_t* w, u32 code) {
  (void)w;
  write_times();
  exit((int)code); /* the kernel keeps the low 8 bits, as for every runner */
}

/* ------------------------------------------------------------------------------------ fds */

u32 Z_wasi_snapshot_preview1Z_fd_close(struct Z_wasi_snapshot_preview1_instance_t* w, u32 fd) {
  (void)w;
  struct fd_entry* e = entry(fd);
  if (!e) return E_BADF;
  /* The process's stdout and stderr stay open: the runner and the lab still read them. */
  if (e->kind == FD_HOST && e->host > 2 && close(e->host) != 0 && errno != EINTR) {
    e->kind = FD_FREE;
    return errno_to_wasi(errno);
  }
  e->kind = FD_FREE;
  return E_SUCCESS;
}

static u8 filetype_of(mode_t m) {
  if (S_ISREG(m)) return FT_REG;
  if (S_ISDIR(m)) return FT_DIR;
  if (S_ISCHR(m)) return FT_CHAR;
  if (S_ISBLK(m)) return FT_BLOCK;
  if (S_ISSOCK(m)) return FT_SOCK_STREAM;
  if (S_ISLNK(m)) return FT_SYMLINK;
  return FT_UNKNOWN;
}

u32 Z_wasi_snapshot_preview1Z_fd_fdstat_get(struct Z_wasi_snapshot_preview1_instance_t* w, u32 fd,
                                            u32 buf) {
  struct fd_entry* e = entry(fd);
  if (!e) return E_BADF;
  u8* p = mem(w, buf, 24);
  if (!p) return E_FAULT;
  u8 filetype = FT_CHAR;
  u16 flags = 0;
  u64 rights = R_ALL;
  if (e->kind == FD_HOST) {
    struct stat st;
    if (fstat(e->host, &st) != 0) return errno_to_wasi(errno);
    filetype = filetype_of(st.st_mode);
    int fl = fcntl(e->host, F_GETFL);
    if (fl < 0) return errno_to_wasi(errno);
    if (fl & O_APPEND) flags |= FDF_APPEND;
    if (fl & O_DSYNC) flags |= FDF_DSYNC;
    if (fl & O_NONBLOCK) flags |= FDF_NONBLOCK;
    if ((fl & O_SYNC) == O_SYNC) flags |= FDF_SYNC;
  }
  /* A character device has no seek and tell rights (wasi-libc's isatty looks for that). */
  if (filetype == FT_CHAR) rights &= ~(R_FD_SEEK | R_FD_TELL);
  memset(p, 0, 24);
  p[0] = filetype;
  memcpy(p + 2, &flags, 2);
  memcpy(p + 8, &rights, 8);
  memcpy(p + 16, &rights, 8);
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_fd_fdstat_set_flags(struct Z_wasi_snapshot_preview1_instance_t* w,
                                                  u32 fd, u32 flags) {
  (void)w;
  struct fd_entry* e = entry(fd);
  if (!e) return E_BADF;
  if (flags & ~(u32)(FDF_APPEND | FDF_NONBLOCK)) return E_NOTSUP;
  if (e->kind != FD_HOST) return E_SUCCESS;
  int fl = fcntl(e->host, F_GETFL);
  if (fl < 0) return errno_to_wasi(errno);
  fl &= ~(O_APPEND | O_NONBLOCK);
  if (flags & FDF_APPEND) fl |= O_APPEND;
  if (flags & FDF_NONBLOCK) fl |= O_NONBLOCK;
  if (fcntl(e->host, F_SETFL, fl) != 0) return errno_to_wasi(errno);
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_fd_prestat_get(struct Z_wasi_snapshot_preview1_instance_t* w, u32 fd,
                                             u32 buf) {
  struct fd_entry* e = entry(fd);
  if (!e || !e->preopen) return E_BADF;
  u8* p = mem(w, buf, 8);
  if (!p) return E_FAULT;
  memset(p, 0, 8); /* tag 0: a directory */
  u32 len = (u32)strlen(e->preopen);
  memcpy(p + 4, &len, 4);
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_fd_prestat_dir_name(struct Z_wasi_snapshot_preview1_instance_t* w,
                                                  u32 fd, u32 path, u32 path_len) {
  struct fd_entry* e = entry(fd);
  if (!e || !e->preopen) return E_BADF;
  size_t n = strlen(e->preopen);
  if (path_len < n) return E_NAMETOOLONG;
  u8* p = mem(w, path, n);
  if (!p) return E_FAULT;
  memcpy(p, e->preopen, n);
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_fd_read(struct Z_wasi_snapshot_preview1_instance_t* w, u32 fd,
                                      u32 iovs, u32 iovs_len, u32 nread_at) {
  struct fd_entry* e = entry(fd);
  if (!e) return E_BADF;
  struct iovec* v;
  u32 err = host_iovecs(w, iovs, iovs_len, &v);
  if (err) return err;
  ssize_t n = 0;
  if (e->kind == FD_HOST) {
    do n = readv(e->host, v, (int)iovs_len);
    while (n < 0 && errno == EINTR);
  }
  free(v);
  if (n < 0) return errno_to_wasi(errno);
  if (!store_u32(w, nread_at, (u32)n)) return E_FAULT;
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_fd_write(struct Z_wasi_snapshot_preview1_instance_t* w, u32 fd,
                                       u32 iovs, u32 iovs_len, u32 nwritten_at) {
  struct fd_entry* e = entry(fd);
  if (!e) return E_BADF;
  if (e->kind != FD_HOST) return E_BADF; /* the empty stdin is not writable */
  struct iovec* v;
  u32 err = host_iovecs(w, iovs, iovs_len, &v);
  if (err) return err;
  ssize_t n;
  do n = writev(e->host, v, (int)iovs_len);
  while (n < 0 && errno == EINTR);
  free(v);
  if (n < 0) return errno_to_wasi(errno);
  if (!store_u32(w, nwritten_at, (u32)n)) return E_FAULT;
  return E_SUCCESS;
}

u32 Z_wasi_snapshot_preview1Z_fd_seek(struct Z_wasi_snapshot_preview1_instance_t* w, u32 fd,
                                      u64 offset, u32 whence, u32 newoffset_at) {
  struct fd_entry* e = entry(fd);
  if (!e) return E_BADF;
  if (e->kind != FD_HOST) return E_SPIPE;
  int how;
  switch (whence) {
    case 0: how = SEEK_SET; break;
    case 1: how = SEEK_CUR; break;
    case 2: how = SEEK_END; break;
    default: return E_INVAL;
  }
  off_t at = lseek(e->host, (off_t)(s64)offset, how);
  if (at < 0) return errno_to_wasi(errno);
  if (!store_u64(w, newoffset_at, (u64)at)) return E_FAULT;
  return E_SUCCESS;
}

static int new_fd(int host) {
  for (int fd = 3; fd < MAX_FDS; fd++) {
    if (fds[fd].kind == FD_FREE) {
      fds[fd].kind = FD_HOST;
      fds[fd].host = host;
      fds[fd].preopen = NULL;
      return fd;
    }
  }
  return -1;
}

/* openat beneath dirfd: openat2 with RESOLVE_BENEATH, else (no openat2 in this kernel) a refusal
 * of absolute paths and ".." components before a plain openat. */
static int open_beneath(int dirfd, const char* path, int flags, mode_t mode) {
#if defined(SYS_openat2)
  static int have_openat2 = 1;
  if (have_openat2) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (u64)flags;
    how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
    how.resolve = RESOLVE_BENEATH;
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return fd;
    if (errno == EPERM) {
      /* EPERM may be a seccomp filter refusing the system call: fall back only then. */
      int saved = errno;
      int probe = (int)syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how);
      if (probe >= 0) {
        close(probe);
        errno = saved;
        return -1;
      }
    }
    have_openat2 = 0;
  }
#endif
  if (path[0] == '/') {
    errno = EPERM;
    return -1;
  }
  for (const char* p = path; *p;) {
    const char* end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      errno = EPERM;
      return -1;
    }
    p += n;
    while (*p == '/') p++;
  }
  return openat(dirfd, path, flags, mode);
}

u32 Z_wasi_snapshot_preview1Z_path_open(struct Z_wasi_snapshot_preview1_instance_t* w, u32 dirfd,
                                        u32 dirflags, u32 path, u32 path_len, u32 oflags,
                                        u64 rights_base, u64 rights_inheriting, u32 fdflags,
                                        u32 fd_at) {
  (void)rights_inheriting;
  struct fd_entry* d = entry(dirfd);
  if (!d) return E_BADF;
  if (d->kind != FD_HOST) return E_NOTDIR;
  const u8* p = mem(w, path, path_len);
  if (!p) return E_FAULT;
  if (memchr(p, 0, path_len)) return E_ILSEQ;
  char* name = malloc((size_t)path_len + 1);
  if (!name) return E_NOMEM;
  memcpy(name, p, path_len);
  name[path_len] = 0;

  int read = (rights_base & (R_FD_READ | R_FD_READDIR)) != 0;
  int write =
      (rights_base & (R_FD_DATASYNC | R_FD_WRITE | R_FD_ALLOCATE | R_FD_FILESTAT_SET_SIZE)) != 0;
  int flags = O_CLOEXEC | (write ? (read ? O_RDWR : O_WRONLY) : O_RDONLY);
  if (oflags & OF_CREAT) flags |= O_CREAT;
  if (oflags & OF_DIRECTORY) flags |= O_DIRECTORY;
  if (oflags & OF_EXCL) flags |= O_EXCL;
  if (oflags & OF_TRUNC) flags |= O_TRUNC;
  if (fdflags & FDF_APPEND) flags |= O_APPEND;
  if (fdflags & FDF_DSYNC) flags |= O_DSYNC;
  if (fdflags & FDF_NONBLOCK) flags |= O_NONBLOCK;
  if (fdflags & FDF_RSYNC) flags |= O_RSYNC;
  if (fdflags & FDF_SYNC) flags |= O_SYNC;
  if (!(dirflags & LOOKUP_SYMLINK_FOLLOW)) flags |= O_NOFOLLOW;

  int host = open_beneath(d->host, name, flags, 0666);
  int saved = errno;
  free(name);
  if (host < 0) return saved == EXDEV ? E_NOTCAPABLE : errno_to_wasi(saved);
  int fd = new_fd(host);
  if (fd < 0) {
    close(host);
    return E_NFILE;
  }
  if (!store_u32(w, fd_at, (u32)fd)) return E_FAULT;
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------------- poll_oneoff */

u32 Z_wasi_snapshot_preview1Z_poll_oneoff(struct Z_wasi_snapshot_preview1_instance_t* w, u32 in,
                                          u32 out, u32 nsubscriptions, u32 nevents_at) {
  if (nsubscriptions == 0) return E_INVAL;
  const u8* subs = mem(w, in, (u64)nsubscriptions * 48);
  u8* events = mem(w, out, (u64)nsubscriptions * 32);
  if (!subs || !events) return E_FAULT;

  /* fd subscriptions are not supported: each gets an event with the error notsup, at once. */
  u32 nevents = 0;
  for (u32 i = 0; i < nsubscriptions; i++) {
    const u8* s = subs + 48 * i;
    if (s[8] != 0) {
      u8* ev = events + 32 * nevents++;
      memset(ev, 0, 32);
      memcpy(ev, s, 8);
      u16 error = E_NOTSUP;
      memcpy(ev + 8, &error, 2);
      ev[10] = s[8];
    }
  }
  if (nevents == 0) {
    /* Clock subscriptions only: sleep until the earliest deadline, then report it. */
    u32 first = 0;
    u64 first_deadline = UINT64_MAX;
    clockid_t first_clock = CLOCK_MONOTONIC;
    for (u32 i = 0; i < nsubscriptions; i++) {
      const u8* s = subs + 48 * i;
      clockid_t clock;
      if (!host_clock(load_u32(s + 16), &clock)) return E_INVAL;
      u64 timeout = load_u64(s + 24);
      u16 flags;
      memcpy(&flags, s + 40, 2);
      u64 deadline = timeout;
      if (!(flags & 1)) { /* relative */
        struct timespec now;
        clock_gettime(clock, &now);
        u64 now_ns = (u64)now.tv_sec * 1000000000ull + (u64)now.tv_nsec;
        deadline = timeout > UINT64_MAX - now_ns ? UINT64_MAX : now_ns + timeout;
      }
      if (deadline < first_deadline) {
        first = i;
        first_deadline = deadline;
        first_clock = clock;
      }
    }
    struct timespec until = {(time_t)(first_deadline / 1000000000ull),
                             (long)(first_deadline % 1000000000ull)};
    int r;
    while ((r = clock_nanosleep(first_clock, TIMER_ABSTIME, &until, NULL)) == EINTR) {
    }
    if (r != 0) return errno_to_wasi(r);
    u8* ev = events;
    memset(ev, 0, 32);
    memcpy(ev, subs + 48 * first, 8);
    ev[10] = 0; /* clock */
    nevents = 1;
  }
  if (!store_u32(w, nevents_at, nevents)) return E_FAULT;
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------------------- main */

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TIMES_FILE SPAWN_NS ARG0 [ARG...]\n", argv[0]);
    return 2;
  }
  times_path = argv[1];
  spawn_ns = strtoull(argv[2], NULL, 10);
  wasi_argc = argc - 3;
  wasi_argv = argv + 3;

  /* instantiate: the runtime, the module's types, the instance, the WASI fds. */
  static struct Z_wasi_snapshot_preview1_instance_t wasi;
  static Z_m_instance_t instance;
  wasm_rt_init();
  Z_m_init_module();
  wasm_rt_trap_t trap = wasm_rt_impl_try();
  if (trap != WASM_RT_TRAP_NONE) {
    fprintf(stderr, "wasm2c: trap: %s\n", wasm_rt_strerror(trap));
    return EXIT_TRAP;
  }
  {
#if HOST_IMPORTS_WASI
    Z_m_instantiate(&instance, &wasi);
#else
    Z_m_instantiate(&instance); /* a module without imports */
#endif
    wasi.memory = Z_mZ_memory(&instance);
    fds[0].kind = FD_EMPTY_STDIN;
    fds[1] = (struct fd_entry){FD_HOST, 1, NULL};
    fds[2] = (struct fd_entry){FD_HOST, 2, NULL};
    int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0) {
      fprintf(stderr, "wasm2c host: cannot open the current directory: %s\n", strerror(errno));
      return EXIT_TRAP;
    }
    fds[3] = (struct fd_entry){FD_HOST, cwd, "."};

    /* execute: _start until it returns or the program calls proc_exit. */
    ready_ns = monotonic_ns();
    Z_mZ__start(&instance);
  }
  write_times();
  return 0;
}
