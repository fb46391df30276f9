/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's SQLite VFS: the default one, with the WAL's appends gathered
 * into one write per transaction.
 *
 * SQLite writes each WAL frame with two writes, its 24-byte header and its
 * page (wal.c walWriteOneFrame): a create's ~3.5 frames were 7 pwrite64
 * calls on the loop thread, and a group commit of 14 creates ~100 of them;
 * the kernel's entry, file lookup, inode lock and ext4 write path per call
 * were ~15 % of the server's CPU under a create stream (perf, bench/README.md
 * "The WAL's size under a write stream, and its writes gathered").
 *
 * DESIGN: a WAL file's writes that follow each other in the file are
 * copied into a buffer and written with one pwrite when a frame header
 * marks its frame as a transaction's commit frame (bytes 4-7, the database
 * size after the commit, non-zero: wal.c walEncodeFrame) and that frame's
 * page has been added. The commit's write returns the error of that one
 * write, so SQLite never publishes a commit (walIndexWriteHdr, after the
 * frames are written) whose frames are not in the file: other connections
 * (the checkpointer, `kubicle list`) read them from the file, and a process
 * killed after the commit finds them in the page cache as before (the
 * shared-memory barrier needs no write of its own). Anything else SQLite
 * does with a WAL file that needs it as written writes the buffer first: a
 * write that does not follow, a read, a sync, a truncation, the size, a file
 * control and close; and the buffer is written when it would pass
 * WAL_GATHER_MAX (a transaction that spills pages before its commit).
 * Locks, shared memory and fetches are the database file's (the default
 * VFS gives a WAL file none), which, as every other file, goes straight to
 * the default VFS. The buffer is freed after each write, so an idle tenant
 * holds none.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"

/* The most one write carries: the default VFS writes at most 128 KiB - 1
 * per pwrite and takes a longer write's remainder after a multiple of
 * 128 KiB as a full disk (os_unix.c seekAndWriteFd masks the length with
 * 0x1ffff), so writes stay below that. */
#define WAL_GATHER_MAX (120 * 1024)

struct vfile {
	sqlite3_file base;
	sqlite3_file *real; /* the default VFS's file, in the same allocation */
	bool wal;
	bool commit_next; /* the last header written was a commit frame's */
	char *buf;        /* gathered writes (WAL) */
	size_t len, cap;
	sqlite3_int64 off; /* file offset of buf[0] */
};

static sqlite3_vfs *real_vfs;
static sqlite3_vfs kb_vfs;
static struct store_vfs_stats vstats;

#define REAL(f) (((struct vfile *)(f))->real)

/* Writes what is gathered; the buffer is freed (an idle WAL holds none).
 * Nothing to do for every other file (no buffer). */
static int wal_flush(struct vfile *p)
{
	if (!p->buf)
		return SQLITE_OK;
	int rc = SQLITE_OK;
	if (p->len) {
		rc = p->real->pMethods->xWrite(p->real, p->buf, (int)p->len, p->off);
		__atomic_fetch_add(&vstats.writes, 1, __ATOMIC_RELAXED);
	}
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
	return rc;
}

static int vf_close(sqlite3_file *f)
{
	struct vfile *p = (struct vfile *)f;
	int rc = wal_flush(p);
	int rc2 = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;
	return rc != SQLITE_OK ? rc : rc2;
}

static int vf_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	int rc = wal_flush((struct vfile *)f);
	return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xRead(REAL(f), buf, amt, off);
}

/* A WAL frame header (24 bytes past the 32-byte WAL header) of a commit
 * frame: its "database size after the commit" is not zero. */
static bool commit_header(const void *buf, int amt, sqlite3_int64 off)
{
	const unsigned char *h = buf;
	return amt == 24 && off >= 32 && (h[4] | h[5] | h[6] | h[7]) != 0;
}

static int vf_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	struct vfile *p = (struct vfile *)f;
	if (!p->wal)
		return p->real->pMethods->xWrite(p->real, buf, amt, off);
	int rc = SQLITE_OK;
	size_t n = (size_t)amt;
	if (p->len && (off != p->off + (sqlite3_int64)p->len || p->len + n > WAL_GATHER_MAX))
		rc = wal_flush(p);
	if (rc != SQLITE_OK)
		return rc;
	bool header = amt == 24 && off >= 32;
	bool commit = p->commit_next && !header;
	p->commit_next = header ? commit_header(buf, amt, off) : false;
	if (p->len + n > p->cap) {
		size_t cap = p->len + n > 64 * 1024 ? WAL_GATHER_MAX : 64 * 1024;
		if (cap < p->len + n) /* one write past the most: alone */
			cap = p->len + n;
		char *nb = realloc(p->buf, cap);
		if (!nb) { /* as SQLite would have: straight to the file */
			rc = wal_flush(p);
			if (rc == SQLITE_OK)
				rc = p->real->pMethods->xWrite(p->real, buf, amt, off);
			return rc;
		}
		p->buf = nb;
		p->cap = cap;
	}
	if (!p->len)
		p->off = off;
	memcpy(p->buf + p->len, buf, n);
	p->len += n;
	__atomic_fetch_add(&vstats.gathered, 1, __ATOMIC_RELAXED);
	/* the commit frame's page: the transaction's frames go out now, and
	 * its commit fails if they cannot */
	return commit ? wal_flush(p) : SQLITE_OK;
}

static int vf_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	int rc = wal_flush((struct vfile *)f);
	return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int vf_sync(sqlite3_file *f, int flags)
{
	int rc = wal_flush((struct vfile *)f);
	return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int vf_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	int rc = wal_flush((struct vfile *)f);
	return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int vf_lock(sqlite3_file *f, int lock)
{
	return REAL(f)->pMethods->xLock(REAL(f), lock);
}

static int vf_unlock(sqlite3_file *f, int lock)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), lock);
}

static int vf_check_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int vf_file_control(sqlite3_file *f, int op, void *arg)
{
	int rc = wal_flush((struct vfile *)f);
	return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int vf_sector_size(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int vf_device_characteristics(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int vf_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, pgsz, extend, pp);
}

static int vf_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}

static void vf_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int vf_shm_unmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static int vf_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
	return REAL(f)->pMethods->xFetch(REAL(f), off, amt, pp);
}

static int vf_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods vf_methods = {
    .iVersion = 3,
    .xClose = vf_close,
    .xRead = vf_read,
    .xWrite = vf_write,
    .xTruncate = vf_truncate,
    .xSync = vf_sync,
    .xFileSize = vf_file_size,
    .xLock = vf_lock,
    .xUnlock = vf_unlock,
    .xCheckReservedLock = vf_check_reserved,
    .xFileControl = vf_file_control,
    .xSectorSize = vf_sector_size,
    .xDeviceCharacteristics = vf_device_characteristics,
    .xShmMap = vf_shm_map,
    .xShmLock = vf_shm_lock,
    .xShmBarrier = vf_shm_barrier,
    .xShmUnmap = vf_shm_unmap,
    .xFetch = vf_fetch,
    .xUnfetch = vf_unfetch,
};

/* For a file of the default VFS without shared memory or fetches (a WAL,
 * a journal): the version-1 methods only (vf_methods' first ones, copied
 * at registration). */
static sqlite3_io_methods vf_methods_v1;

/* The default VFS's file sits after ours, aligned as SQLite aligns them. */
#define REAL_OFFSET ((sizeof(struct vfile) + 15) & ~(size_t)15)

static int vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
		    int *out_flags)
{
	(void)vfs;
	struct vfile *p = (struct vfile *)f;
	memset(p, 0, sizeof(*p));
	p->real = (sqlite3_file *)((char *)f + REAL_OFFSET);
	int rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out_flags);
	if (rc != SQLITE_OK || !p->real->pMethods) {
		/* as the default VFS: no methods, xClose is not called */
		p->base.pMethods = NULL;
		return rc;
	}
	const sqlite3_io_methods *m = p->real->pMethods;
	bool v3 = m->iVersion >= 3 && m->xShmMap && m->xShmLock && m->xShmBarrier && m->xShmUnmap &&
		  m->xFetch && m->xUnfetch;
	/* the default VFS's WAL files have no shared memory (it is the
	 * database file's): their version-1 methods are all SQLite calls */
	p->wal = (flags & SQLITE_OPEN_WAL) != 0;
	p->base.pMethods = v3 ? &vf_methods : &vf_methods_v1;
	return rc;
}

/* The rest is the default VFS's, on its own handle. */
static int vfs_delete(sqlite3_vfs *v, const char *name, int sync)
{
	(void)v;
	return real_vfs->xDelete(real_vfs, name, sync);
}

static int vfs_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
	(void)v;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int vfs_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
	(void)v;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *vfs_dlopen(sqlite3_vfs *v, const char *name)
{
	(void)v;
	return real_vfs->xDlOpen(real_vfs, name);
}

static void vfs_dlerror(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	real_vfs->xDlError(real_vfs, n, out);
}

static void (*vfs_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
	(void)v;
	return real_vfs->xDlSym(real_vfs, h, sym);
}

static void vfs_dlclose(sqlite3_vfs *v, void *h)
{
	(void)v;
	real_vfs->xDlClose(real_vfs, h);
}

static int vfs_randomness(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int vfs_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return real_vfs->xSleep(real_vfs, us);
}

static int vfs_current_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int vfs_last_error(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, out) : 0;
}

static int vfs_current_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static pthread_once_t vfs_once = PTHREAD_ONCE_INIT;
static int vfs_rc = SQLITE_ERROR;

static void vfs_register(void)
{
	real_vfs = sqlite3_vfs_find(NULL);
	if (!real_vfs || real_vfs->iVersion < 2 || !real_vfs->xCurrentTimeInt64)
		return;
	kb_vfs = (sqlite3_vfs){
	    .iVersion = 2,
	    .szOsFile = (int)(REAL_OFFSET + (size_t)real_vfs->szOsFile),
	    .mxPathname = real_vfs->mxPathname,
	    .zName = STORE_VFS_NAME,
	    .xOpen = vfs_open,
	    .xDelete = vfs_delete,
	    .xAccess = vfs_access,
	    .xFullPathname = vfs_full_pathname,
	    .xDlOpen = vfs_dlopen,
	    .xDlError = vfs_dlerror,
	    .xDlSym = vfs_dlsym,
	    .xDlClose = vfs_dlclose,
	    .xRandomness = vfs_randomness,
	    .xSleep = vfs_sleep,
	    .xCurrentTime = vfs_current_time,
	    .xGetLastError = vfs_last_error,
	    .xCurrentTimeInt64 = vfs_current_time64,
	};
	vf_methods_v1 = vf_methods;
	vf_methods_v1.iVersion = 1;
	vf_methods_v1.xShmMap = NULL;
	vf_methods_v1.xShmLock = NULL;
	vf_methods_v1.xShmBarrier = NULL;
	vf_methods_v1.xShmUnmap = NULL;
	vf_methods_v1.xFetch = NULL;
	vf_methods_v1.xUnfetch = NULL;
	vfs_rc = sqlite3_vfs_register(&kb_vfs, 0);
}

const char *store__vfs(void)
{
	pthread_once(&vfs_once, vfs_register);
	return vfs_rc == SQLITE_OK ? STORE_VFS_NAME : NULL;
}

void store_vfs_stats(struct store_vfs_stats *out)
{
	out->gathered = __atomic_load_n(&vstats.gathered, __ATOMIC_RELAXED);
	out->writes = __atomic_load_n(&vstats.writes, __ATOMIC_RELAXED);
}
