// The check of the emulator's own unit tests (test-amd-mma, test-counters, test-gmma): a failed
// condition is reported with its place and counted in `failures`, and the test goes on;
// expect_stop runs what the emulator must stop.

#pragma once

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

static int failures = 0;

#define CHECK(c, ...)                                            \
    do {                                                         \
        if (!(c)) {                                              \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
            failures++;                                          \
        }                                                        \
    } while (0)

// runs f in a child; the child must exit with the emulator's status 3 and a report containing want
template <typename F> static void expect_stop(const char * what, const char * want, F f) {
    int fd[2];
    if (pipe(fd) != 0) {
        CHECK(false, "pipe");
        return;
    }
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        f();
        _exit(0);
    }
    close(fd[1]);
    std::string err;
    char        buf[512];
    for (ssize_t n; (n = read(fd[0], buf, sizeof(buf))) > 0;) {
        err.append(buf, (size_t) n);
    }
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 3 && err.find(want) != std::string::npos;
    printf("stops %s: %s\n", what, ok ? "yes" : "NO");
    CHECK(ok, "%s: status %d, report: %s", what, status, err.c_str());
}
