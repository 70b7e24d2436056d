/*
 * sigstamp: the signal-latency workload.
 *
 * Prints "ready <pid> <ns>" once its handlers are installed, then "S <signo> <ns>" from inside
 * the handler for every SIGINT, SIGTERM or SIGHUP, where <ns> is CLOCK_MONOTONIC in nanoseconds
 * taken first thing in the handler. It survives those signals (the bench sends hundreds to one
 * process) and exits 0 at EOF on stdin.
 *
 * Only async-signal-safe calls in the handler: clock_gettime and write, digits by hand.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t put_u64(char *out, unsigned long long value) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value > 0);
  for (size_t i = 0; i < n; i++) out[i] = digits[n - 1 - i];
  return n;
}

static unsigned long long monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void write_line(const char *tag, unsigned long long a, unsigned long long b) {
  char line[80];
  size_t n = strlen(tag);
  memcpy(line, tag, n);
  line[n++] = ' ';
  n += put_u64(line + n, a);
  line[n++] = ' ';
  n += put_u64(line + n, b);
  line[n++] = '\n';
  const char *p = line;
  while (n > 0) {
    ssize_t w = write(STDOUT_FILENO, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void on_signal(int signo) {
  unsigned long long now = monotonic_ns();
  int saved = errno;
  write_line("S", (unsigned long long)signo, now);
  errno = saved;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  /* No SA_RESTART: read() returns EINTR and the loop simply reads again. */
  int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
    if (sigaction(signals[i], &sa, NULL) != 0) return 2;
  }
  write_line("ready", (unsigned long long)getpid(), monotonic_ns());
  char buffer[256];
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n == 0) return 0;
    if (n < 0 && errno != EINTR) return 1;
  }
}
