/* main.c — switchyard-router: the master process.
 *
 *   switchyard-router [--config FILE] [flags...]   (docs/router.md)
 *
 * The master loads and checks the configuration, opens (or creates) the
 * state-plane region, registers the static fleet when no statebus runs
 * and discovers it (core/standalone.c; health: core/prober.c), creates the
 * listening socket — or takes the one systemd passes
 * (switchyard-router.socket, sd_listen_fds) — and the shared metrics
 * mapping, then forks --processes worker processes (worker.c) that share
 * that socket. It then supervises:
 *   SIGCHLD  a worker that died is restarted with the same index (its
 *            metrics row continues) after its proc slot is reaped;
 *   SIGHUP   the configuration is re-read and checked; if good, each
 *            worker is told to reload (SIGHUP); a bad one is logged and the
 *            running generation kept;
 *   SIGTERM/SIGINT  drain: the master closes its copy of the listening
 *            socket and every worker gets SIGTERM at once (each closes its
 *            copy, so new connections are refused, and finishes its
 *            requests within --shutdown-drain-secs, server.c); stragglers
 *            are killed 5 s after it.
 * Its loop waits in the discovery transfers of standalone.c (at most 50 ms
 * per turn) and drives the health probes of prober.h while no statebus
 * runs; once a second it re-registers missing static workers and reaps
 * dead process slots.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "router/core/prober.h"
#include "router/core/standalone.h"
#include "router/http/metrics.h"
#include "router/http/tls.h"
#include "router/worker.h"
#include "router/core/cmdline.h"
#include "router/core/generation.h"

static void usage(void)
{
	printf("usage: switchyard-router [--config FILE] [--check-config] [flags]\n"
	       "       switchyard-router --help | --version\n"
	       "  --host ADDR (127.0.0.1)  --port N (30000)  --processes N (1)\n"
	       "  --worker-urls URL...  --model-id NAME  --shm PATH\n"
	       "  --pd-disaggregation --prefill URL [BOOTSTRAP_PORT] --decode URL\n"
	       "  --policy P  --prefill-policy P  --decode-policy P\n"
	       "  --request-timeout-secs N (1800, whole request)  --header-timeout-secs N (300)\n"
	       "  --stream-idle-timeout-secs N (180)  --shutdown-drain-secs N (30)\n"
	       "  --max-body-bytes N, --max-payload-size N (33554432)\n"
	       "  --health-check-interval-secs N  --health-check-timeout-secs N\n"
	       "  --health-check-endpoint PATH  --disable-health-check\n"
	       "  --prometheus-host ADDR  --prometheus-port N  --metrics-names switchyard|sglang|both\n"
	       "  --cors-allowed-origins ORIGIN...  --request-id-headers NAME...\n"
	       "  --tokenizer bytes|hf|off  --tokenizer-path DIR|FILE  --model-path DIR\n"
	       "  --chat-template FILE\n"
	       "  --cb-threshold N (0 = off)  --cb-cool-down-secs N (30)  --retry-once\n"
	       "  --override-sampling-params JSON  --sampling-param-conflict reject|allow\n"
	       "  --no-decision-headers  --access-log PATH  --admin-api-key KEY\n"
	       "  --max-connections-per-worker N (256)  --max-pending-body-bytes N (268435456)\n"
	       "  --retry-max-retries N (0)  --stall-timeout-secs N (5)\n"
	       "  --max-concurrent-requests N (-1 = off)  --queue-size N (100)\n"
	       "  --queue-timeout-secs N (60)\n"
	       "  --api-key KEY  --api-key-file PATH  --tls-cert-path PEM  --tls-key-path PEM\n"
	       "  --admin-port N  --admin-host ADDR\n"
	       "  --log-level debug|info|warn|error  --log-format text|json\n"
	       "  admission, cache_aware and bucket flags: see docs/router.md\n"
	       "Every flag has a YAML key: its name, dashes as underscores, under router:,\n"
	       "policy: or statebus: (README \"Configuration\"); SGLang router flags are\n"
	       "mapped or refused with their replacement (README \"Coming from SGLang's router\").\n");
}

/* Prints every line of `err` prefixed with the program name. */
static void print_errors(const char *err)
{
	for (const char *p = err; *p;) {
		size_t n = strcspn(p, "\n");
		fprintf(stderr, "switchyard-router: %.*s\n", (int)n, p);
		p += n;
		if (*p == '\n')
			p++;
	}
}

static volatile sig_atomic_t m_term, m_hup, m_chld;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		m_hup = 1;
	else if (sig == SIGCHLD)
		m_chld = 1;
	else
		m_term = 1;
}

/* A listening socket of our own on host:port (SO_REUSEADDR; no
 * SO_REUSEPORT, so a port another process already serves is refused: the
 * worker processes share this one socket); `host_flag` and `port_flag` name
 * the settings in messages (an unresolvable host, a port in use). */
static int bind_listener(const char *host, int port_no, const char *host_flag,
			 const char *port_flag, char *err, size_t errcap)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
			*res = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%d", port_no);
	int grc = getaddrinfo(host, port, &hints, &res);
	if (grc != 0) {
		snprintf(err, errcap, "%s %s: %s", host_flag, host, gai_strerror(grc));
		return -1;
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
		int e = errno;
		if (e == EADDRINUSE)
			snprintf(err, errcap,
				 "cannot listen on %s:%d: the port is already served (another "
				 "switchyard-router or another program); stop it or give another %s",
				 host, port_no, port_flag);
		else
			snprintf(err, errcap, "cannot listen on %s:%d: %s", host, port_no, strerror(e));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The metrics listener (--prometheus-host/--prometheus-port), or -1 when
 * neither is given (0 returned) or on error (-1, err set). */
static int open_metrics_listener(const struct sy_config *cfg, int *fd, char *err, size_t errcap)
{
	const struct sy_config_router *rc = &cfg->router;
	*fd = -1;
	if (rc->prometheus_host == NULL && rc->prometheus_port < 0)
		return 0;
	const char *host = rc->prometheus_host ? rc->prometheus_host : "0.0.0.0";
	int port = rc->prometheus_port >= 0 ? rc->prometheus_port : 29000;
	if ((*fd = bind_listener(host, port, "--prometheus-host", "--prometheus-port", err,
				 errcap)) < 0)
		return -1;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(*fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						      : ((struct sockaddr_in *)&ss)->sin_port);
	sy_info("metrics on http://%s:%d/metrics (%s names)", host, port,
		rc->metrics_names == SY_METRICS_SGLANG  ? "SGLang router"
		: rc->metrics_names == SY_METRICS_BOTH ? "switchyard and SGLang router"
						       : "switchyard");
	return 0;
}

/* Listening socket: systemd's, else our own. */
static int open_listener(const struct sy_config *cfg, char *err, size_t errcap)
{
	int n = sd_listen_fds(0);
	if (n >= 1) {
		if (n > 1)
			sy_warn("systemd passed %d sockets; using the first", n);
		int fl = fcntl(SD_LISTEN_FDS_START, F_GETFL);
		if (fl >= 0)
			fcntl(SD_LISTEN_FDS_START, F_SETFL, fl | O_NONBLOCK);
		sy_info("using the listening socket passed by systemd");
		return SD_LISTEN_FDS_START;
	}
	return bind_listener(cfg->router.host, cfg->router.port, "--host", "--port", err, errcap);
}

struct child {
	pid_t pid;
	uint64_t started_ns;
	unsigned restarts;
};

static int g_argc;
static char **g_argv;
static int g_metrics_fd = -1; /* the metrics listener, inherited by the workers */

/* What the configuration loader cannot check: the listener's TLS files
 * load and match, and no worker needs TLS from the upstream client.
 * Returns 0, or -1 with the reason in err. */
static int check_edge(const struct sy_config *cfg, char *err, size_t cap)
{
	if (cfg->router.tls_cert_path != NULL) {
		SSL_CTX *ctx = rt_tls_server_ctx(cfg->router.tls_cert_path, cfg->router.tls_key_path,
						 err, cap);
		if (ctx == NULL)
			return -1;
		SSL_CTX_free(ctx);
	}
	for (size_t i = 0; i < cfg->n_workers; i++) {
		if (strncasecmp(cfg->workers[i].url, "https://", 8) == 0) {
			snprintf(err, cap,
				 "workers[%zu].url: %s: https:// workers are not supported: the "
				 "upstream client speaks plain HTTP only; serve the engine over "
				 "http:// (on a private network) or put a TLS proxy beside it",
				 i, cfg->workers[i].url);
			return -1;
		}
	}
	return 0;
}

static int g_admin_fd = -1; /* the admin listener, or -1 */

static pid_t spawn(unsigned index, int listen_fd, struct statebus_region *region,
		   struct rt_metrics *metrics)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	/* Child: its own handle on the region (the master's is not shared). */
	statebus_region_close(region);
	struct router_gen *gen = NULL;
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct router_cmdline cl;
	if (router_gen_from_args(g_argc, g_argv, 1, &gen, &cl, err, sizeof(err)) != 0 ||
	    gen == NULL) {
		sy_error("worker %u: %s", index, err);
		_exit(1);
	}
	extern struct router_worker rt_w;
	rt_w.metrics = metrics;
	rt_w.admin_listen_fd = g_admin_fd;
	rt_w.metrics_listen_fd = g_metrics_fd;
	_exit(rt_worker_main(index, listen_fd, gen, g_argc, g_argv));
}

int main(int argc, char **argv)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct router_cmdline cl;
	g_argc = argc;
	g_argv = argv;
	sy_log_init("router", SY_LOG_INFO, SY_LOG_TEXT);
	/* The master's own generation (the fleet it registers without a
	 * statebus) is built here, so --check-config and start-up refuse what a
	 * worker process would refuse. */
	struct router_gen *mg = NULL;
	int grc = router_gen_from_args(argc, argv, 0, &mg, &cl, err, sizeof(err));
	if (cl.help) {
		usage();
		return 0;
	}
	if (cl.version) {
		printf("switchyard-router %s\n", SY_VERSION);
		return 0;
	}
	if (grc == 0 && check_edge(&mg->cfg, err, sizeof(err)) != 0) {
		router_gen_unref(mg);
		grc = SY_ECONFIG;
	}
	if (grc != 0) {
		print_errors(err);
		return 2;
	}
	/* The first generation stays referenced: its settings (listener,
	 * processes, region) hold for the master's life; reloads reach the
	 * worker processes. */
	struct router_gen *first = router_gen_ref(mg);
	const struct sy_config *cfg0 = &first->cfg;
	sy_log_init("router", (enum sy_log_level)cfg0->log.level, (enum sy_log_format)cfg0->log.format);
	if (cl.check_only) {
		printf("configuration OK: %zu worker(s), %d process(es), listen %s:%d\n",
		       cfg0->n_workers, cfg0->router.processes, cfg0->router.host, cfg0->router.port);
		router_gen_unref(first);
		router_gen_unref(mg);
		return 0;
	}

	/* The listeners first: a port already served stops the start before
	 * the state plane is touched. */
	int listen_fd = open_listener(cfg0, err, sizeof(err));
	if (listen_fd < 0) {
		sy_error("%s", err);
		return 1;
	}
	if (cfg0->router.admin_port != 0) {
		const char *ah = cfg0->router.admin_host ? cfg0->router.admin_host : cfg0->router.host;
		g_admin_fd = bind_listener(ah, cfg0->router.admin_port, "--admin-host",
					   "--admin-port", err, sizeof(err));
		if (g_admin_fd < 0) {
			sy_error("admin listener: %s", err);
			return 1;
		}
		sy_info("admin listener on %s:%d", ah, cfg0->router.admin_port);
	}
	if (open_metrics_listener(cfg0, &g_metrics_fd, err, sizeof(err)) != 0) {
		sy_error("%s", err);
		return 1;
	}
	struct statebus_region *region = NULL;
	struct statebus_params prm = {.group = cfg0->state.group};
	int rc = statebus_region_open(cfg0->state.shm_path, &prm, STATEBUS_CREATE, &region, err,
				      sizeof(err));
	if (rc != SY_OK) {
		sy_error("state plane: %s", err);
		return 1;
	}
	if (rt_statebus_live(region))
		sy_info("statebus is live: using its workers table");
	else
		sy_info("no live statebus: degraded mode, registering %zu static worker(s)",
			cfg0->n_workers);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct rt_standalone *solo = NULL;
	if (rt_standalone_create(&mg->cfg, &solo) != SY_OK) {
		sy_error("out of memory");
		return 1;
	}
	for (int tries = 0; tries < 50 && rt_standalone_register(solo, region) < 0; tries++)
		usleep(20000);
	if (!rt_statebus_live(region))
		rt_standalone_warn_unconfigured(solo, region);
	rt_reap(region);
	/* Without a statebus the master discovers its engines (standalone.h)
	 * and probes their health (prober.h); the first answers of both are
	 * awaited (≤ 1 s) so the workers start with a known fleet. */
	struct rt_prober *prober = rt_prober_create(statebus_workers_capacity(region), sy_mono_ns());
	if (prober == NULL) {
		sy_error("cannot start the health prober (libcurl or memory): without it no worker "
			 "would ever be picked while no statebus runs");
		return 1;
	}
	for (uint64_t until = sy_mono_ns() + 1000000000u;
	     !rt_statebus_live(region) && sy_mono_ns() < until;) {
		rt_standalone_tick(solo, region, 10);
		rt_prober_tick(prober, region, cfg0, sy_mono_ns(), true);
		if (rt_prober_settled(prober, region) && rt_standalone_settled(solo))
			break;
	}

	unsigned procs = (unsigned)cfg0->router.processes;
	struct rt_metrics *metrics = rt_metrics_create(procs, statebus_workers_capacity(region));
	if (metrics == NULL) {
		sy_error("cannot map the metrics area: %s", strerror(errno));
		return 1;
	}

	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct child *kids = calloc(procs, sizeof(*kids));
	if (kids == NULL)
		return 1;
	for (unsigned i = 0; i < procs; i++) {
		kids[i].pid = spawn(i, listen_fd, region, metrics);
		kids[i].started_ns = sy_mono_ns();
	}
	if (sd_listen_fds(0) >= 1)
		sy_info("serving systemd's socket with %u worker process(es), shm %s", procs,
			cfg0->state.shm_path);
	else
		sy_info("listening on %s:%d with %u worker process(es), shm %s", cfg0->router.host,
			cfg0->router.port, procs, cfg0->state.shm_path);
	sd_notify(0, "READY=1");

	uint64_t last_tick = 0, term_deadline = 0;
	bool terminating = false;
	for (;;) {
		rt_standalone_tick(solo, region, 50); /* signals end the wait early */
		if (m_term && !terminating) {
			terminating = true;
			sd_notify(0, "STOPPING=1");
			/* Stop accepting at once: the listening socket closes when
			 * the last process closes its copy (workers close theirs on
			 * SIGTERM after taking what is queued); systemd's socket
			 * stays open in systemd. */
			close(listen_fd);
			listen_fd = -1;
			if (g_admin_fd >= 0) {
				close(g_admin_fd);
				g_admin_fd = -1;
			}
			if (g_metrics_fd >= 0) {
				close(g_metrics_fd);
				g_metrics_fd = -1;
			}
			term_deadline =
				sy_mono_ns() + ((uint64_t)mg->cfg.router.shutdown_drain_secs + 5) * 1000000000u;
			sy_info("SIGTERM: draining %u worker process(es) (up to %d s)", procs,
				mg->cfg.router.shutdown_drain_secs);
			for (unsigned i = 0; i < procs; i++)
				if (kids[i].pid > 0)
					kill(kids[i].pid, SIGTERM);
		}
		if (m_hup && !terminating) {
			m_hup = 0;
			sd_notify(0, "RELOADING=1");
			struct router_gen *g = NULL;
			struct router_cmdline c;
			if (router_gen_from_args(argc, argv, 0, &g, &c, err, sizeof(err)) != 0 ||
			    g == NULL || check_edge(&g->cfg, err, sizeof(err)) != 0) {
				if (g != NULL)
					router_gen_unref(g);
				sy_error("SIGHUP: configuration refused, keeping the running one: %s", err);
			} else if (rt_standalone_configure(solo, &g->cfg) != SY_OK) {
				sy_error("SIGHUP: out of memory, keeping the running configuration");
				router_gen_unref(g);
			} else {
				router_gen_unref(mg);
				mg = g;
				rt_standalone_register(solo, region);
				sy_info("SIGHUP: configuration OK, reloading the worker processes");
				for (unsigned i = 0; i < procs; i++)
					if (kids[i].pid > 0)
						kill(kids[i].pid, SIGHUP);
			}
			sd_notify(0, "READY=1");
		}
		if (m_chld || terminating) {
			m_chld = 0;
			int status;
			pid_t pid;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				for (unsigned i = 0; i < procs; i++) {
					if (kids[i].pid != pid)
						continue;
					kids[i].pid = 0;
					rt_reap(region);
					if (terminating)
						break;
					if (WIFSIGNALED(status))
						sy_warn("worker %u (pid %d) died of signal %d; restarting", i,
							(int)pid, WTERMSIG(status));
					else
						sy_warn("worker %u (pid %d) exited with %d; restarting", i,
							(int)pid, WEXITSTATUS(status));
					/* Back off a crash loop: at most one restart per 200 ms. */
					if (sy_mono_ns() - kids[i].started_ns < 200000000u)
						usleep(200000);
					kids[i].restarts++;
					kids[i].pid = spawn(i, listen_fd, region, metrics);
					kids[i].started_ns = sy_mono_ns();
				}
			}
		}
		if (terminating) {
			bool any = false;
			for (unsigned i = 0; i < procs; i++)
				any |= kids[i].pid > 0;
			if (!any)
				break;
			if (sy_mono_ns() > term_deadline) {
				for (unsigned i = 0; i < procs; i++)
					if (kids[i].pid > 0) {
						sy_warn("worker %u did not drain in time: killing it", i);
						kill(kids[i].pid, SIGKILL);
					}
				term_deadline = UINT64_MAX;
			}
			continue;
		}
		uint64_t now = sy_mono_ns();
		rt_prober_tick(prober, region, &mg->cfg, now, !rt_statebus_live(region));
		if (now - last_tick >= 1000000000u) {
			last_tick = now;
			rt_standalone_register(solo, region);
			rt_reap(region);
			rt_affinity_sweep(region, &mg->cfg, now);
		}
	}
	rt_reap(region);
	rt_prober_free(prober);
	rt_standalone_destroy(solo);
	curl_global_cleanup();
	statebus_region_close(region);
	router_gen_unref(mg);
	router_gen_unref(first);
	free(kids);
	sy_info("stopped");
	return 0;
}
