// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdbd: start-up, the listening socket, signals, systemd, and
 * an orderly stop.
 *
 * The main thread owns the listening socket, the signals (a signalfd:
 * every other thread has them blocked) and a timer; it accepts clients,
 * reads their credentials from the kernel and hands each to the least
 * loaded worker.  SIGHUP reloads tdbd.conf; SIGTERM/SIGINT stop: no more
 * accepts, workers answer what their clients already sent, then exit.
 *
 * Out of descriptors (accept fails with EMFILE or ENFILE), the listener
 * would stay readable for ever: we refuse the connections waiting (a
 * spare descriptor, closed to make room to accept each one and close it,
 * so their clients see a hang-up instead of a hung connect), stop
 * polling the listener until the next tick, and say so once per episode
 * and then at most every few seconds with a count (accept_pause).
 *
 * systemd: READY=1 once serving, STATUS= lines, WATCHDOG=1 only while
 * every worker has finished a round within half the watchdog interval
 * (so a hung worker gets the service restarted), RELOADING=1 / READY=1
 * around a reload, STOPPING=1.  Socket activation: a socket passed by
 * systemd (sd_listen_fds) is used instead of making one.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "durable/durable.h"
#include "kernel/kernel.h"
#include "notify.h"
#include "platform/user.h"
#include "serve/client.h"
#include "serve/worker.h"
#include "serve/sweep.h"
#include "sigbus.h"
#include "tdbd.h"

#define TICK_MS 250

uint64_t tdbd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Everything main() sets up, for an orderly undo. */
struct daemon_state {
	struct tdbd d;
	int argc;
	char **argv;
	int lfd, sigfd, tfd, epfd, lockfd;
	bool own_socket;        /* we made it: chmod at reload, unlink */
	bool scratch;           /* data dir made by us: remove at exit */
	char lockpath[PATH_MAX + 16];
	uint64_t watchdog_usec;
	uint64_t last_status;
	/* accept failing (EMFILE, ENFILE, ENOMEM...): the listener is out
	 * of the epoll set until the next tick */
	int spare;              /* /dev/null, given up to refuse a client */
	bool lpaused;
	int lerr;               /* the errno of the episode; 0 = none */
	uint64_t lrefused;      /* connections refused in the episode */
	uint64_t lsaid;         /* ns: when it was last reported */
};

/* The engine's lines name tables (client-supplied): escaped whole. */
static void engine_log(void *arg, int level, const char *msg)
{
	char esc[768];

	(void)arg;
	tdbd_log(level, "engine: %s",
		 tdb_escape(esc, sizeof(esc), msg, strlen(msg)));
}

/* --- data directory ------------------------------------------------------ */

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	char *p;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Make (or check) the data directory and lock it against a second
 * daemon, which is told who holds it. */
static int data_dir_open(struct daemon_state *s)
{
	struct tdbd_config *cfg = &s->d.cfg;
	char pid[32] = "";
	int err, fd;
	ssize_t n;

	if (!cfg->data_dir[0]) {
		char tmpl[] = "/tmp/tdbd.XXXXXX";

		if (!mkdtemp(tmpl)) {
			tdbd_log(L_ERR, "cannot make a scratch directory in "
				 "/tmp: %s", ERRSTR(errno));
			return -errno;
		}
		snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", tmpl);
		s->scratch = true;
	} else if ((err = mkdir_p(cfg->data_dir, 0750))) {
		tdbd_log(L_ERR, "data directory %s: %s", cfg->data_dir,
			 ERRSTR(-err));
		return err;
	}
	snprintf(s->lockpath, sizeof(s->lockpath), "%s/tdbd.lock",
		 cfg->data_dir);
	fd = open(s->lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		tdbd_log(L_ERR, "data directory %s: cannot open %s: %s",
			 cfg->data_dir, s->lockpath, ERRSTR(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = 0;
		pid[strcspn(pid, "\n")] = 0;
		tdbd_log(L_ERR, "data directory %s is in use by another tdbd "
			 "(pid %s; lock %s)", cfg->data_dir,
			 pid[0] ? pid : "unknown", s->lockpath);
		close(fd);
		return err == -EWOULDBLOCK ? -EBUSY : err;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n)
		tdbd_log(L_WARNING, "cannot write pid to %s", s->lockpath);
	s->lockfd = fd;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void data_dir_close(struct daemon_state *s)
{
	if (s->lockfd >= 0) {
		if (s->scratch)
			unlink(s->lockpath);
		close(s->lockfd);
	}
	/* a scratch directory goes with everything in it (WAL, checkpoint) */
	if (s->scratch && nftw(s->d.cfg.data_dir, rm_one, 16,
			       FTW_DEPTH | FTW_PHYS))
		tdbd_log(L_WARNING, "cannot remove scratch directory %s: %s",
			 s->d.cfg.data_dir, ERRSTR(errno));
}

/* --- the socket --------------------------------------------------------- */

static int socket_perms(struct daemon_state *s)
{
	struct tdbd_config *cfg = &s->d.cfg;
	gid_t gid = (gid_t)-1;

	if (cfg->socket_group[0]) {
		struct group *g = getgrnam(cfg->socket_group);
		char *end;
		unsigned long v = strtoul(cfg->socket_group, &end, 10);

		if (g)
			gid = g->gr_gid;
		else if (!*end)
			gid = (gid_t)v;
		else {
			tdbd_log(L_ERR, "socket-group: no group named '%s'",
				 cfg->socket_group);
			return -EINVAL;
		}
	}
	if (chmod(cfg->socket, cfg->socket_mode) ||
	    (gid != (gid_t)-1 && chown(cfg->socket, (uid_t)-1, gid))) {
		tdbd_log(L_ERR, "socket %s: cannot set mode/group: %s",
			 cfg->socket, ERRSTR(errno));
		return -errno;
	}
	return 0;
}

/* Is a daemon answering on path?  (A leftover socket file refuses.) */
static bool socket_alive(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	alive = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return alive;
}

static int socket_make(struct daemon_state *s)
{
	struct tdbd_config *cfg = &s->d.cfg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	char *slash;
	mode_t old;
	int fd, err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cfg->socket);
	snprintf(dir, sizeof(dir), "%s", cfg->socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if ((err = mkdir_p(dir, 0755))) {
			tdbd_log(L_ERR, "socket directory %s: %s", dir,
				 ERRSTR(-err));
			return err;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old = umask(0177);      /* no window with a looser mode */
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	if (err == -EADDRINUSE) {
		if (socket_alive(&sa)) {
			tdbd_log(L_ERR, "socket %s: another daemon is "
				 "listening there", cfg->socket);
			umask(old);
			close(fd);
			return -EADDRINUSE;
		}
		tdbd_log(L_NOTICE, "socket %s: removing a stale socket left "
			 "by a daemon that died", cfg->socket);
		unlink(cfg->socket);
		err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	}
	umask(old);
	if (err) {
		tdbd_log(L_ERR, "socket %s: %s", cfg->socket, ERRSTR(-err));
		close(fd);
		return err;
	}
	s->own_socket = true;
	if ((err = socket_perms(s)) || listen(fd, 512)) {
		err = err ? err : -errno;
		close(fd);
		return err;
	}
	s->lfd = fd;
	return 0;
}

/* Before recovery, which may take minutes: is another daemon serving on
 * our socket?  Then there is no point in loading anything.  (The bind
 * in socket_make checks again: this is only the early answer.) */
static int socket_precheck(struct daemon_state *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (sd_listen_fds(0) > 0)
		return 0;               /* socket activation: ours already */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->d.cfg.socket);
	if (!socket_alive(&sa))
		return 0;
	tdbd_log(L_ERR, "socket %s: another daemon is listening there; "
		 "not starting (stop it first, or give another --socket)",
		 s->d.cfg.socket);
	return -EADDRINUSE;
}

static int socket_open(struct daemon_state *s)
{
	int n = sd_listen_fds(1);

	if (n > 1) {
		tdbd_log(L_ERR, "socket activation: %d sockets passed, "
			 "expected one", n);
		return -EINVAL;
	}
	if (n == 1) {
		int fd = SD_LISTEN_FDS_START;

		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			tdbd_log(L_ERR, "socket activation: the socket passed "
				 "is not a listening Unix stream socket");
			return -EINVAL;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		s->lfd = fd;
		tdbd_log(L_INFO, "using the socket systemd passed");
		return 0;
	}
	return socket_make(s);
}

/* --- clients arriving ------------------------------------------------------ */

static int peer_creds(int fd, struct creds *cr)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	memset(cr, 0, sizeof(*cr));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len))
		return -errno;
	cr->pid = uc.pid;
	cr->uid = uc.uid;
	cr->gid = uc.gid;
	len = sizeof(cr->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, cr->groups, &len) == 0)
		cr->ngroups = len / sizeof(gid_t);
	return 0;   /* ERANGE (over 64 groups): primary group only */
}

#define ACCEPT_SAY_NS 5000000000ull    /* report an episode this often */
#define REFUSE_MAX    64u               /* refused per accept_pause */

static void listener_watch(struct daemon_state *s, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s->lfd };

	if (on == !s->lpaused)
		return;
	if (epoll_ctl(s->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->lfd,
		      &ev) == 0 || errno == EEXIST || errno == ENOENT)
		s->lpaused = !on;
}

/* Refuse the connections waiting without the descriptors to take them:
 * the spare makes room for one accept at a time. */
static void refuse_waiting(struct daemon_state *s)
{
	unsigned int i;

	for (i = 0; i < REFUSE_MAX && s->spare >= 0; i++) {
		int fd;

		close(s->spare);
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			s->lrefused++;
		}
		s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
	}
}

/* accept() failed with err: back off until the next tick. */
static void accept_pause(struct daemon_state *s, int err)
{
	uint64_t now = tdbd_now_ns();

	if (err == EMFILE || err == ENFILE)
		refuse_waiting(s);
	listener_watch(s, false);
	if (!s->lerr) {
		s->lerr = err;
		s->lsaid = now;
		tdbd_log_rl(RL_ACCEPT, L_WARNING, "accept: %s: refusing new "
			    "connections until it clears", ERRSTR(err));
	} else if (now - s->lsaid >= ACCEPT_SAY_NS) {
		s->lsaid = now;
		tdbd_log_rl(RL_ACCEPT, L_WARNING, "accept: still %s: %llu "
			    "connection(s) refused so far", ERRSTR(err),
			    (unsigned long long)s->lrefused);
	}
}

/* An accept worked again: say so, with the count of the episode. */
static void accept_resume(struct daemon_state *s)
{
	if (s->lerr)
		tdbd_log_rl(RL_ACCEPT, L_NOTICE, "accept works again after "
			    "%s; %llu connection(s) were refused meanwhile",
			    ERRSTR(s->lerr),
			    (unsigned long long)s->lrefused);
	s->lerr = 0;
	s->lrefused = 0;
}

static void accept_all(struct daemon_state *s)
{
	struct tdbd *d = &s->d;

	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct tdbo_client *oc;
		struct client *c;
		struct creds cr;
		const char *why = NULL;
		int oerr = 0;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				accept_pause(s, errno);
			return;
		}
		if (s->lerr)
			accept_resume(s);
		if (peer_creds(fd, &cr)) {
			tdbd_log_rl(RL_REFUSED, L_WARNING, "client without "
				    "credentials refused: %s",
				    ERRSTR(errno));
			close(fd);
			continue;
		}
		c = tdbd_client_new(d, fd, &cr, NULL);
		if (!c) {
			close(fd);
			continue;
		}
		/* the owner's client (it wakes c for its watches);
		 * max-clients (the last eighth kept for root) and
		 * max-clients-per-uid, given back by tdbo_client_free */
		oc = tdbd_owner_client(d, &cr, c, &oerr);
		if (oc && tdbo_client_attach_charge(oc, 2ULL *
						    d->cfg.ring_size, &why)) {
			tdbd_log_rl(RL_REFUSED, L_WARNING, "client pid %d uid "
				    "%u refused: %s", (int)cr.pid,
				    (unsigned int)cr.uid, why);
			tdbo_client_free(oc);
			oc = NULL;
		}
		if (!oc) {
			tdbd_client_free(c);    /* closes fd */
			continue;
		}
		c->oc = oc;
		tdbo_client_accept(oc);
		tdbd_log_rl(RL_CLIENT, L_DEBUG, "client %llu: pid %d uid %u "
			    "gid %u", (unsigned long long)c->id, (int)cr.pid,
			    (unsigned int)cr.uid, (unsigned int)cr.gid);
		tdbd_worker_hand(d, c);
	}
}

/* --- descriptors --------------------------------------------------------- */

/* Descriptors: each client holds 6 (socket, pidfd, two eventfds, two
 * ring memfds), each table up to 2 (its region's memfd, its feed's), and
 * tdbd itself some (listener, epolls, WAL, checkpoint, workers' eventfds:
 * FD_SPARE is generous). */
#define FD_PER_CLIENT 6u
#define FD_PER_TABLE 2u
#define FD_SPARE 256u

/* Raise RLIMIT_NOFILE's soft limit to the hard one, so max-clients is
 * not refused by a low default (1024 soft, often). */
static void fds_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		tdbd_log(L_WARNING, "cannot raise the descriptor limit to "
			 "%llu: %s", (unsigned long long)rl.rlim_max,
			 ERRSTR(errno));
}

/* Does max-clients fit in the descriptors we may open?  Only a warning:
 * max-clients is the operator's to choose (and may change at reload);
 * past the limit accept() fails with EMFILE instead of a clean refusal. */
static void fds_check(const struct tdbd_config *cfg)
{
	uint64_t need = (uint64_t)cfg->max_clients * FD_PER_CLIENT +
			(uint64_t)TDBD_TABLES_MAX * FD_PER_TABLE + FD_SPARE;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    need <= rl.rlim_cur)
		return;
	tdbd_log(L_WARNING, "max-clients (%u) may need %llu descriptors "
		 "(%u per client, %u per table for %u tables, %u spare), but "
		 "RLIMIT_NOFILE is %llu: raise it (LimitNOFILE=) or lower "
		 "max-clients", cfg->max_clients, (unsigned long long)need,
		 FD_PER_CLIENT, FD_PER_TABLE, TDBD_TABLES_MAX, FD_SPARE,
		 (unsigned long long)rl.rlim_cur);
}

/* --- reload, watchdog, status ------------------------------------------- */

/* The limits of quota.h: read at each charge, so they change at once
 * (a lower one takes nothing back: it refuses the next charge). */
static void reload_limits(struct tdbd *d, const struct tdbd_config *n)
{
#define SET(f) __atomic_store_n(&d->cfg.f, n->f, __ATOMIC_RELAXED)
	SET(max_clients_per_uid);
	SET(max_tables_per_uid);
	SET(max_reserve_per_uid);
	SET(max_reserve);
	SET(max_txn_memory_per_uid);
	SET(max_txn_memory);
	SET(max_snapshot_memory_per_uid);
	SET(max_watches_per_uid);
	SET(max_watches_total);
	SET(max_data_per_uid);
	SET(max_ring_memory_per_uid);
	SET(max_ring_memory);
#undef SET
}

static void reload(struct daemon_state *s)
{
	struct tdbd *d = &s->d;
	struct tdbd_config n;
	struct tdbd_args a;
	char err[512], changed[512], restart[256];

	tdbd_notify("RELOADING=1\nMONOTONIC_USEC=%llu",
		    (unsigned long long)(tdbd_now_ns() / 1000));
	if (tdbd_config_from_args(&n, s->argc, s->argv, &a, err,
				  sizeof(err))) {
		tdbd_log(L_ERR, "reload refused, configuration unchanged: %s",
			 err);
		tdbd_notify("READY=1\nSTATUS=reload refused: %s", err);
		return;
	}
	if (s->scratch && !n.data_dir[0])       /* still the scratch one */
		memcpy(n.data_dir, d->cfg.data_dir, sizeof(n.data_dir));
	tdbd_config_diff(&d->cfg, &n, changed, sizeof(changed), restart,
			 sizeof(restart));
	if (restart[0])
		tdbd_log(L_WARNING, "reload: %s changed but take effect only "
			 "at restart", restart);
	/* What may change at run time; workers read these fields as they
	 * go, each on its own (no field depends on another). */
	d->cfg.socket_mode = n.socket_mode;
	memcpy(d->cfg.socket_group, n.socket_group, sizeof(n.socket_group));
	__atomic_store_n(&d->cfg.client_deadline_ms, n.client_deadline_ms,
			 __ATOMIC_RELAXED);
	if (n.max_clients > d->cfg.max_clients)
		fds_check(&n);
	__atomic_store_n(&d->cfg.max_clients, n.max_clients, __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.max_txn_ops, n.max_txn_ops, __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.max_txn_bytes, n.max_txn_bytes,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.max_txns, n.max_txns, __ATOMIC_RELAXED);
	reload_limits(d, &n);
	__atomic_store_n(&d->cfg.max_snapshot_memory, n.max_snapshot_memory,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.max_memory, n.max_memory, __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.max_watches, n.max_watches,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.max_tables, n.max_tables, __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.table_mode, n.table_mode, __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.idle_spin_us, n.idle_spin_us,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&d->cfg.reader_lease_ms, n.reader_lease_ms,
			 __ATOMIC_RELAXED);
	tdbd_limits_update(d);          /* the owner's, from d->cfg */
	d->cfg.log_level = n.log_level;
	tdbd_log_set_level(n.log_level);
	if (s->own_socket)
		socket_perms(s);
	tdbd_log(L_INFO, "reloaded %s: %s", a.config_path ? a.config_path :
		 "(no file)", changed[0] ? changed : "nothing changed");
	tdbd_notify("READY=1\nSTATUS=reloaded; serving on %s",
		    d->cfg.socket);
}

static void tick(struct daemon_state *s)
{
	struct tdbd *d = &s->d;
	uint64_t now = tdbd_now_ns(), oldest = now;
	unsigned int i;

	listener_watch(s, true);        /* after an accept back-off */
	tdbd_log_rl_flush();
	if (d->o)
		tdbo_log_flush(d->o);   /* the owner's and engine's lines */

	if (d->kern)
		oldest = tdbd_kernel_heartbeat(d);
	for (i = 0; i < d->nworkers; i++) {
		uint64_t hb = __atomic_load_n(&d->workers[i].heartbeat,
					      __ATOMIC_RELAXED);

		if (hb < oldest)
			oldest = hb;
	}
	if (s->watchdog_usec) {
		if ((now - oldest) / 1000 < s->watchdog_usec / 2)
			tdbd_notify("WATCHDOG=1");
		else
			tdbd_log(L_ERR, "a worker has not finished a round "
				 "in %llu ms: withholding WATCHDOG=1",
				 (unsigned long long)(now - oldest) / 1000000);
	}
	if (now - s->last_status > 5000000000ull && d->kern) {
		char st[512];

		s->last_status = now;
		tdbd_kernel_status(d, st, sizeof(st));
		tdbd_notify("STATUS=%s", st);
	} else if (now - s->last_status > 5000000000ull) {
		s->last_status = now;
		tdbd_notify("STATUS=serving %u client(s), %u table(s); "
			    "%llu requests",
			    __atomic_load_n(&d->oct->clients,
					    __ATOMIC_RELAXED),
			    tdbo_table_count(d->o),
			    (unsigned long long)tdbo_owner_requests(d->o));
	}
}

/* --- start and stop -------------------------------------------------------- */

static int signals_open(struct daemon_state *s)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* Before any thread starts, so all inherit the mask. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return s->sigfd < 0 ? -errno : 0;
}

static int timer_open(struct daemon_state *s)
{
	struct itimerspec its = { 0 };
	uint64_t usec = 0;
	uint64_t ms = TICK_MS;

	if (sd_watchdog_enabled(0, &usec) > 0 && usec) {
		s->watchdog_usec = usec;
		if (usec / 4000 < ms)
			ms = usec / 4000 ? usec / 4000 : 1;
	}
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->tfd < 0)
		return -errno;
	its.it_interval.tv_sec = (time_t)(ms / 1000);
	its.it_interval.tv_nsec = (long)(ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	return timerfd_settime(s->tfd, 0, &its, NULL) ? -errno : 0;
}

static int start(struct daemon_state *s)
{
	struct tdbd *d = &s->d;
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	d->start_ns = tdbd_now_ns();
	d->hugepages_ok = true;
	pthread_mutex_init(&d->wake_lock, NULL);
	tdbp_set_log(engine_log, NULL);
	fds_raise();
	fds_check(&d->cfg);
	if ((err = data_dir_open(s)))
		return err;
	if ((err = tdbd_owner_start(d))) {
		tdbd_log(L_ERR, "owner: %s", tdbe_strerror(err));
		return err;
	}
	/* two rings per client, for the largest max-clients a reload may
	 * set */
	if ((err = tdbd_sigbus_init(2 * 65536))) {
		tdbd_log(L_ERR, "SIGBUS guard: %s", ERRSTR(-err));
		return err;
	}
	if ((err = signals_open(s)) || (err = timer_open(s)))
		return err;
	/* kernel mode: recover the mirror, then supervise tdb.ko; no
	 * socket, no workers (clients talk to tdb.ko) */
	if (d->cfg.backend == TDBD_BACKEND_KERNEL) {
		if ((err = tdbd_durable_start(d, tdbd_on_durable)) ||
		    (err = tdbd_kernel_start(d)))
			return err;
		goto loop;
	}
	/* recovery: before a client can connect, but not for nothing */
	if ((err = socket_precheck(s)) ||
	    (err = tdbd_durable_start(d, tdbd_on_durable)) ||
	    (err = socket_open(s)))
		return err;
	if ((err = tdbd_workers_start(d))) {
		tdbd_log(L_ERR, "workers: %s", ERRSTR(-err));
		return err;
	}
	if ((err = tdbd_sweep_start(d))) {
		tdbd_log(L_ERR, "expiry's sweep: %s", ERRSTR(-err));
		return err;
	}
loop:
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ev.data.fd = s->lfd;
	if (s->lfd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev);
	ev.data.fd = s->sigfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sigfd, &ev);
	ev.data.fd = s->tfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->tfd, &ev);
	return 0;
}

/* Serve until SIGTERM/SIGINT. */
static void serve(struct daemon_state *s)
{
	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(s->epfd, ev, 8, -1), i;

		for (i = 0; i < n; i++) {
			int fd = ev[i].data.fd;

			if (fd == s->lfd) {
				accept_all(s);
			} else if (fd == s->tfd) {
				uint64_t x;

				if (read(s->tfd, &x, sizeof(x)) < 0)
					(void)0;
				tick(s);
			} else if (fd == s->sigfd) {
				struct signalfd_siginfo si;

				while (read(s->sigfd, &si, sizeof(si)) ==
				       sizeof(si)) {
					if (si.ssi_signo == SIGHUP) {
						reload(s);
						continue;
					}
					tdbd_log(L_INFO, "%s: stopping",
						 strsignal((int)si.ssi_signo));
					return;
				}
			}
		}
	}
}

static void stop(struct daemon_state *s)
{
	struct tdbd *d = &s->d;

	tdbd_notify("STOPPING=1\nSTATUS=stopping: answering what clients "
		    "sent, then closing");
	if (s->lfd >= 0) {
		close(s->lfd);
		if (s->own_socket)
			unlink(d->cfg.socket);
	}
	if (d->workers)
		tdbd_workers_stop(d);
	tdbd_sweep_stop(d);
	tdbd_kernel_stop(d);
	tdbd_durable_stop(d);
	tdbd_kernel_free(d);
	if (d->o)
		tdbd_owner_stop(d);
	data_dir_close(s);
	tdbd_sigbus_fini();
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->spare >= 0)
		close(s->spare);
	if (s->tfd >= 0)
		close(s->tfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
}

int main(int argc, char **argv)
{
	static struct daemon_state s;
	struct tdbd_args a;
	char err[512];
	int rc;

	s.argc = argc;
	s.argv = argv;
	s.lfd = s.sigfd = s.tfd = s.epfd = s.lockfd = s.spare = -1;
	if (tdbd_config_from_args(&s.d.cfg, argc, argv, &a, err,
				  sizeof(err))) {
		fprintf(stderr, "tdbd: %s\n", err);
		return 2;
	}
	if (a.help) {
		fputs(tdbd_config_usage(), stdout);
		return 0;
	}
	if (a.version) {
		printf("tdbd %s\n", TDB_VERSION);
		return 0;
	}
	if (a.check) {
		printf("tdbd: configuration OK (%s)\n",
		       a.config_path ? a.config_path : "defaults and options");
		return 0;
	}
	tdbd_log_set_level(s.d.cfg.log_level);
	rc = start(&s);
	if (rc) {
		tdbd_notify("STATUS=failed to start: %s", ERRSTR(-rc));
		stop(&s);
		return 1;
	}
	if (s.d.cfg.backend == TDBD_BACKEND_KERNEL) {
		tdbd_log(L_INFO, "supervising tdb.ko (kernel mode, no "
			 "socket); data in %s%s", s.d.cfg.data_dir,
			 s.scratch ? " (scratch, removed at exit)" : "");
		tdbd_notify("READY=1\nSTATUS=supervising tdb.ko");
	} else {
		tdbd_log(L_INFO, "serving on %s; data in %s%s; %u worker(s)",
			 s.d.cfg.socket, s.d.cfg.data_dir,
			 s.scratch ? " (scratch, removed at exit)" : "",
			 s.d.cfg.workers);
		tdbd_notify("READY=1\nSTATUS=serving on %s", s.d.cfg.socket);
	}
	serve(&s);
	stop(&s);
	if (s.d.kern_failed) {
		tdbd_log(L_ERR, "stopped: following tdb.ko's log failed "
			 "(see above)");
		return 1;
	}
	tdbd_log(L_INFO, "stopped");
	return 0;
}
