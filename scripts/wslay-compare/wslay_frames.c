/* Decodes N masked text frames (one protocol line each, as herald-bench --proto herald-ws
 * sends them) with Debian's wslay frame layer (wslay_frame_recv), from memory, and prints
 * how many payload bytes came out. Run under `valgrind --tool=callgrind` it gives wslay's
 * instructions per frame, to set beside heraldd's own decoder (docs/architecture.md,
 * "WebSocket"). Build: cc -O2 wslay_frames.c -lwslay */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wslay/wslay.h>

struct source { const uint8_t *data; size_t size, at; };

static ssize_t recv_cb(uint8_t *buf, size_t len, int flags, void *user) {
    (void)flags;
    struct source *s = user;
    size_t left = s->size - s->at;
    if (left == 0) return -1;
    size_t n = len < left ? len : left;
    memcpy(buf, s->data + s->at, n);
    s->at += n;
    return (ssize_t)n;
}

static ssize_t send_cb(const uint8_t *d, size_t l, int f, void *u) { (void)d; (void)f; (void)u; return (ssize_t)l; }
static int mask_cb(uint8_t *b, size_t l, void *u) { (void)u; memset(b, 0, l); return 0; }

int main(int argc, char **argv) {
    size_t frames = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    const char *line = "{\"op\":\"pub\",\"ch\":\"bench.0\",\"data\":\"xxxxxxxxxxxxxx\"}\n";
    size_t len = strlen(line);
    size_t each = 2 + 4 + len;
    uint8_t *data = malloc(frames * each);
    const uint8_t key[4] = {0x12, 0x9a, 0xf0, 0x3c};
    for (size_t i = 0; i < frames; i++) {
        uint8_t *f = data + i * each;
        f[0] = 0x81; f[1] = 0x80 | (uint8_t)len;
        memcpy(f + 2, key, 4);
        for (size_t k = 0; k < len; k++) f[6 + k] = (uint8_t)line[k] ^ key[k & 3];
    }
    struct source src = { data, frames * each, 0 };
    struct wslay_frame_callbacks cbs = { send_cb, recv_cb, mask_cb };
    wslay_frame_context_ptr ctx;
    if (wslay_frame_context_init(&ctx, &cbs, &src) != 0) return 1;
    size_t payload = 0, got = 0;
    struct wslay_frame_iocb iocb;
    while (src.at < src.size || got < frames) {
        memset(&iocb, 0, sizeof iocb);
        ssize_t r = wslay_frame_recv(ctx, &iocb);
        if (r < 0) { if (src.at >= src.size) break; continue; }
        payload += iocb.data_length;
        if (iocb.data_length + 0 > 0 && iocb.fin) got++;
    }
    printf("frames %zu payload bytes %zu\n", got, payload);
    wslay_frame_context_free(ctx);
    free(data);
    return 0;
}
