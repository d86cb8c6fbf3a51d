/* The real-device engine (backends/uring/engine.c) under AddressSanitizer + UBSan: the HSS core
 * with its I/O log on drives a random read/write workload with migrations on a tmpfs file and a
 * disk file, once with io_uring and once with psync; every page must read back its latest
 * version. Also: stamps, bounds errors, the raw benchmark loop, open/close cycles.
 * Skips (exit 0) when io_uring is unavailable. Run by `make test-asan`. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "hss.h"
#include "simdev.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void make_paths(char *fast, char *slow, size_t n)
{
    snprintf(fast, n, "%s/hss_test_uring_%d_fast.img", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
    snprintf(slow, n, "/tmp/hss_test_uring_%d_slow.img", (int)getpid());
    unlink(fast);
    unlink(slow);
}

static void workload(int engine)
{
    char fast[256], slow[256];
    make_paths(fast, slow, sizeof fast);
    const uint64_t span = 1024, cap0 = 128;
    const char *paths[2] = {fast, slow};
    uint64_t sizes[2] = {cap0 * UR_PAGE, span * UR_PAGE};
    int engines[2] = {engine, engine};
    static ur_engine e;
    if (ur_open(&e, 2, paths, sizes, engines, UR_O_CREATE, 8, 1, 0) < 0) {
        fprintf(stderr, "open failed: %s\n", e.err);
        failures++;
        return;
    }
    simdev dev[2];
    simdev_params p;
    memset(&p, 0, sizeof p);
    p.servers = 4;
    p.read_us = p.write_us = 10;
    p.read_bw = p.write_bw = 1000;
    p.capacity_pages = cap0;
    simdev_init(&dev[0], &p, 1);
    p.capacity_pages = span;
    simdev_init(&dev[1], &p, 2);
    hss h;
    uint64_t cap[2] = {cap0, span};
    CHECK(hss_init(&h, 2, dev, cap, 4, 1, 32, 8) == HSS_OK);
    hss_log_enable(&h, 1);
    double lat_out[64];
    for (int i = 0; i < 4000; i++) {
        uint64_t np = 1 + rnd() % 4, pg = rnd() % (span - np);
        int op = (int)(rnd() % 2);
        double t = i * 5.0, lat;
        CHECK(hss_begin(&h, t, op, pg * 4096, np * 4096) == HSS_OK);
        CHECK(hss_finish(&h, (int)(rnd() % 2), &lat) == HSS_OK);
        uint64_t cand;
        if (hss_candidate(&h, &cand))
            hss_enqueue(&h, cand, (int)(rnd() % 2));
        if (i % 16 == 15 || i == 3999) {
            size_t ends = 0;
            for (size_t k = 0; k < h.log.len; k++)
                ends += h.log.buf[k].kind == HSS_LOG_END;
            double arr[64];
            for (size_t k = 0; k < ends; k++)
                arr[k] = t;
            ur_set_output(&e, lat_out, 64);
            if (ur_exec(&e, h.log.buf, h.log.len, arr, ends, 0) < 0) {
                fprintf(stderr, "exec failed: %s\n", e.err);
                failures++;
                break;
            }
            h.log.len = 0;
        }
    }
    CHECK(ur_flush(&e) == 0);
    CHECK(e.st.verify_errors == 0);
    CHECK(e.st.copy_pages > 500);
    /* read every written page back from where the core says it lives */
    size_t n = ur_written_pages(&e, NULL, 0);
    uint64_t *pages = malloc(n * 8), *slots = malloc(n * 8);
    uint8_t *devs = malloc(n);
    ur_written_pages(&e, pages, n);
    for (size_t k = 0; k < n; k++) {
        hss_page *pg = hss_lookup(&h, pages[k]);
        devs[k] = (uint8_t)hss_dev_of(pg);
        slots[k] = hss_slot_of(&h, pages[k], pg);
    }
    uint64_t lost = 1, corrupt = 1;
    CHECK(ur_verify(&e, n, pages, devs, slots, &lost, &corrupt) == 0);
    CHECK(lost == 0 && corrupt == 0 && n > 500);
    if (e.st.verify_errors)
        fprintf(stderr, "%s\n", e.verify_msg);
    /* the raw benchmark loop */
    int64_t el, lat[64];
    CHECK(ur_bench(&e, 1, 0, 4096, 8, 64, 0, 1, &el, lat) == 0 && el > 0);
    CHECK(ur_bench(&e, 0, 1, 8192, 4, 64, 1, 1, &el, NULL) == 0);
    /* a log entry beyond the device is refused with the path in the message */
    hss_log_ent bad[2] = {{0, span, 1, HSS_LOG_READ, 1, {0, 0}}, {0, 0, 1, HSS_LOG_END, 0, {0, 0}}};
    double a = 0;
    CHECK(ur_exec(&e, bad, 2, &a, 1, 1) < 0 && strstr(e.err, slow) != NULL);
    hss_free(&h);
    ur_close(&e, 1);
    CHECK(access(fast, F_OK) != 0 && access(slow, F_OK) != 0);
    free(pages);
    free(slots);
    free(devs);
}

int main(void)
{
    char why[256];
    char page[UR_PAGE] __attribute__((aligned(8)));
    uint32_t found;
    ur_stamp_page(page, 9, 3);
    CHECK(ur_check_page(page, 9, 3, &found) == 0 && found == 3);
    CHECK(ur_check_page(page, 9, 4, &found) == 1);
    page[100] ^= 1;
    CHECK(ur_check_page(page, 9, 3, &found) == 2);
    workload(UR_ENGINE_PSYNC);
    { /* a created file unlinked while open: still usable; close never unlinks its old name */
        char fast[256], slow[256];
        make_paths(fast, slow, sizeof fast);
        const char *paths[1] = {slow};
        uint64_t sizes[1] = {65536};
        int engines[1] = {UR_ENGINE_PSYNC};
        static ur_engine e;
        static char buf[UR_PAGE] __attribute__((aligned(UR_PAGE))); /* O_DIRECT alignment */
        CHECK(ur_open(&e, 1, paths, sizes, engines, UR_O_CREATE, 4, 0, 0) == 0);
        CHECK(ur_unlink_created(&e) == 0 && access(slow, F_OK) != 0);
        CHECK(pwrite(e.dev[0].fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf);
        FILE *other = fopen(slow, "w"); /* someone else's file under the same name */
        CHECK(other != NULL);
        if (other)
            fclose(other);
        ur_close(&e, 1);
        CHECK(access(slow, F_OK) == 0);
        unlink(slow);
    }
    if (ur_probe(why, sizeof why) != 0) {
        printf("test_uring: io_uring part skipped: %s\n", why);
    } else {
        workload(UR_ENGINE_URING);
        char fast[256], slow[256];
        make_paths(fast, slow, sizeof fast);
        const char *paths[1] = {fast};
        uint64_t sizes[1] = {65536};
        int engines[1] = {UR_ENGINE_URING};
        static ur_engine e;
        for (int i = 0; i < 200; i++) { /* open/close cycles: LeakSanitizer checks the rest */
            CHECK(ur_open(&e, 1, paths, sizes, engines, UR_O_CREATE, 4, i % 2, 0) == 0);
            ur_close(&e, 1);
        }
    }
    if (failures) {
        fprintf(stderr, "test_uring: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_uring: all passed\n");
    return 0;
}
