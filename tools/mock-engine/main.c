/* main.c — switchyard-mock-engine: flags, signals, the event loop.
 *
 * One thread: h2o_evloop_run() sleeps until I/O or the next engine timer,
 * then mock_engine_tick() runs timers, schedules, and publishes. SIGTERM /
 * SIGINT end the loop; shutdown publishes END_SEQ on every KV stream.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/errors.h"
#include "common/log.h"
#include "tools/mock-engine/flags.h"
#include "tools/mock-engine/http.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	struct mock_config cfg;
	const char *level_name;
	int rc = mock_flags_parse(&cfg, argc, argv, &level_name);
	if (rc)
		return rc > 0 ? 0 : 2;
	enum sy_log_level level;
	if (sy_log_level_parse(level_name, &level)) {
		fprintf(stderr, "--log-level: debug|info|warn|error\n");
		return 2;
	}
	sy_log_init("mock-engine", level, SY_LOG_TEXT);

	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: wake epoll */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	static struct mock_engine eng;
	h2o_evloop_t *loop = h2o_evloop_create();
	rc = mock_engine_init(&eng, &cfg, loop);
	if (rc == 0)
		rc = mock_http_start(&eng, cfg.host, cfg.port);
	if (rc) {
		sy_error("start-up failed: %s", sy_strerror(rc));
		return 1;
	}
	sy_info("listening on http://%s:%d (kv %d, load %d, replay %d, dp %d, block %u, %s)",
		cfg.host, cfg.port, cfg.kv_port, cfg.load_port, cfg.replay_port, cfg.dp_size,
		cfg.block_size,
		cfg.pd_mode == MOCK_PD_PREFILL ? "prefill" : cfg.pd_mode == MOCK_PD_DECODE ? "decode" : "plain");

	while (!stop_requested) {
		h2o_evloop_run(loop, mock_engine_wait_ms(&eng));
		mock_engine_tick(&eng);
	}
	sy_info("shutting down: publishing END_SEQ");
	mock_http_stop();
	mock_engine_shutdown(&eng);
	h2o_evloop_run(loop, 0); /* lets h2o free the closed sockets */
	return 0;
}
