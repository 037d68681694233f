#include "pack_format.h"

#include <string.h>
#include <zlib.h>

static inline uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999; }
        else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1; }
        else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC; }
        else { f = b ^ c ^ d; k = 0xCA62C1D6; }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d; d = c; c = rol(b, 30); b = a; a = t;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

void tidemark_sha1_init(tidemark_sha1 *ctx) {
    static const uint32_t initial[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    memcpy(ctx->state, initial, sizeof initial);
    ctx->length = 0;
    ctx->used = 0;
}

void tidemark_sha1_update(tidemark_sha1 *ctx, const void *data, size_t length) {
    const uint8_t *p = data;
    ctx->length += length;
    if (ctx->used > 0) {
        size_t take = 64 - ctx->used < length ? 64 - ctx->used : length;
        memcpy(ctx->buffer + ctx->used, p, take);
        ctx->used += take;
        p += take;
        length -= take;
        if (ctx->used < 64) return;
        sha1_block(ctx->state, ctx->buffer);
        ctx->used = 0;
    }
    for (; length >= 64; p += 64, length -= 64) sha1_block(ctx->state, p);
    memcpy(ctx->buffer, p, length);
    ctx->used = length;
}

void tidemark_sha1_final(tidemark_sha1 *ctx, uint8_t digest[20]) {
    uint64_t bits = ctx->length * 8;
    uint8_t pad[72] = {0x80};
    size_t padding = (ctx->used < 56 ? 56 : 120) - ctx->used;
    for (int i = 0; i < 8; i++) pad[padding + i] = (uint8_t)(bits >> (56 - 8 * i));
    tidemark_sha1_update(ctx, pad, padding + 8);
    for (int i = 0; i < 5; i++) {
        digest[4 * i] = (uint8_t)(ctx->state[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(ctx->state[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(ctx->state[i] >> 8);
        digest[4 * i + 3] = (uint8_t)ctx->state[i];
    }
}

size_t tidemark_pack_entry_bound(size_t length) { return 16 + compressBound((uLong)length); }

/// The type-and-size header of a pack entry; returns its length (at most 10 bytes).
static size_t entry_header(int type, size_t size, uint8_t *out) {
    size_t n = 0;
    uint8_t byte = (uint8_t)((type & 7) << 4 | (size & 0x0f));
    size >>= 4;
    while (size) {
        out[n++] = byte | 0x80;
        byte = size & 0x7f;
        size >>= 7;
    }
    out[n++] = byte;
    return n;
}

size_t tidemark_pack_entry(int type, const void *data, size_t length, uint8_t *out, size_t capacity, int level) {
    if (capacity < 16) return 0;
    size_t n = entry_header(type, length, out);
    uLongf written = (uLongf)(capacity - n);
    if (compress2(out + n, &written, data, (uLong)length, level) != Z_OK) return 0;
    return n + written;
}

size_t tidemark_pack_entry_head(int type, size_t length, uint8_t out[16], int level) {
    size_t n = entry_header(type, length, out);
    // The zlib header compress2 writes: deflate with a 32 KiB window, the level's FLEVEL, FCHECK.
    unsigned cmf = 0x78;
    unsigned flevel = level == 0 || level == 1 ? 0 : level < 6 ? 1 : level == 6 || level == -1 ? 2 : 3;
    unsigned flg = flevel << 6;
    flg += 31 - (cmf * 256 + flg) % 31;
    out[n++] = (uint8_t)cmf;
    out[n++] = (uint8_t)flg;
    return n;
}

size_t tidemark_deflate_part_bound(size_t length) { return compressBound((uLong)length) + 16; }

size_t tidemark_deflate_part(const void *data, size_t length, const void *history, size_t history_length,
                             int last, uint8_t *out, size_t capacity, int level) {
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    if (deflateInit2(&stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    size_t written = 0;
    if (history_length > 32768) {
        history = (const uint8_t *)history + (history_length - 32768);
        history_length = 32768;
    }
    if (history_length == 0 || deflateSetDictionary(&stream, history, (uInt)history_length) == Z_OK) {
        stream.next_in = (Bytef *)data;
        stream.avail_in = (uInt)length;
        stream.next_out = out;
        stream.avail_out = (uInt)capacity;
        int rc = deflate(&stream, last ? Z_FINISH : Z_SYNC_FLUSH);
        int done = last ? rc == Z_STREAM_END : (rc == Z_OK && stream.avail_in == 0 && stream.avail_out > 0);
        if (done) written = capacity - stream.avail_out;
    }
    deflateEnd(&stream);
    return written;
}

uint32_t tidemark_adler32(const void *data, size_t length) {
    return (uint32_t)adler32_z(adler32(0, Z_NULL, 0), data, length);
}
