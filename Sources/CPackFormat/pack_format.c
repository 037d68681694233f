#include "pack_format.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/// True when the processor has the SHA extensions (and the SSSE3 and SSE4.1 they are used with).
static int has_sha_extensions(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & bit_SHA) != 0;
}

// One group of four rounds after the first four: the message words of group g are in M; the
// words of groups g+1, g+2 and g+3 are advanced as far as M allows (Intel's SHA extensions guide).
#define SHA1_GROUP(g, ECUR, ENEXT, M, M1, M2, M3, F)                    \
    ECUR = _mm_sha1nexte_epu32(ECUR, M);                                \
    ENEXT = abcd;                                                       \
    if ((g) <= 18) M1 = _mm_sha1msg2_epu32(M1, M);                      \
    abcd = _mm_sha1rnds4_epu32(abcd, ECUR, F);                          \
    if ((g) <= 16) M3 = _mm_sha1msg1_epu32(M3, M);                      \
    if ((g) <= 17) M2 = _mm_xor_si128(M2, M);

/// SHA-1 of whole 64-byte blocks with the SHA extensions: about four times the portable code's speed.
__attribute__((target("sha,ssse3,sse4.1")))
static void sha1_blocks_extensions(uint32_t h[5], const uint8_t *p, size_t blocks) {
    const __m128i order = _mm_set_epi64x(0x0001020304050607ULL, 0x08090a0b0c0d0e0fULL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1B);
    __m128i e0 = _mm_set_epi32((int)h[4], 0, 0, 0), e1;
    for (; blocks > 0; blocks--, p += 64) {
        const __m128i abcdSaved = abcd, eSaved = e0;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)p), order);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), order);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), order);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), order);
        // Rounds 0-15: the message words as loaded.
        e0 = _mm_add_epi32(e0, m0);
        e1 = abcd;
        abcd = _mm_sha1rnds4_epu32(abcd, e0, 0);
        e1 = _mm_sha1nexte_epu32(e1, m1);
        e0 = abcd;
        abcd = _mm_sha1rnds4_epu32(abcd, e1, 0);
        m0 = _mm_sha1msg1_epu32(m0, m1);
        e0 = _mm_sha1nexte_epu32(e0, m2);
        e1 = abcd;
        abcd = _mm_sha1rnds4_epu32(abcd, e0, 0);
        m1 = _mm_sha1msg1_epu32(m1, m2);
        m0 = _mm_xor_si128(m0, m2);
        e1 = _mm_sha1nexte_epu32(e1, m3);
        e0 = abcd;
        m0 = _mm_sha1msg2_epu32(m0, m3);
        abcd = _mm_sha1rnds4_epu32(abcd, e1, 0);
        m2 = _mm_sha1msg1_epu32(m2, m3);
        m1 = _mm_xor_si128(m1, m3);
        // Rounds 16-79.
        SHA1_GROUP(4, e0, e1, m0, m1, m2, m3, 0)
        SHA1_GROUP(5, e1, e0, m1, m2, m3, m0, 1)
        SHA1_GROUP(6, e0, e1, m2, m3, m0, m1, 1)
        SHA1_GROUP(7, e1, e0, m3, m0, m1, m2, 1)
        SHA1_GROUP(8, e0, e1, m0, m1, m2, m3, 1)
        SHA1_GROUP(9, e1, e0, m1, m2, m3, m0, 1)
        SHA1_GROUP(10, e0, e1, m2, m3, m0, m1, 2)
        SHA1_GROUP(11, e1, e0, m3, m0, m1, m2, 2)
        SHA1_GROUP(12, e0, e1, m0, m1, m2, m3, 2)
        SHA1_GROUP(13, e1, e0, m1, m2, m3, m0, 2)
        SHA1_GROUP(14, e0, e1, m2, m3, m0, m1, 2)
        SHA1_GROUP(15, e1, e0, m3, m0, m1, m2, 3)
        SHA1_GROUP(16, e0, e1, m0, m1, m2, m3, 3)
        SHA1_GROUP(17, e1, e0, m1, m2, m3, m0, 3)
        SHA1_GROUP(18, e0, e1, m2, m3, m0, m1, 3)
        SHA1_GROUP(19, e1, e0, m3, m0, m1, m2, 3)
        e0 = _mm_sha1nexte_epu32(e0, eSaved);
        abcd = _mm_add_epi32(abcd, abcdSaved);
    }
    _mm_storeu_si128((__m128i *)h, _mm_shuffle_epi32(abcd, 0x1B));
    h[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}
#endif

int tidemark_sha1_accelerated(void) {
#if defined(__x86_64__)
    // Asked once; threads racing on the first call store the same answer.
    static int known = -1;
    int answer = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (answer < 0) {
        answer = has_sha_extensions();
        __atomic_store_n(&known, answer, __ATOMIC_RELAXED);
    }
    return answer;
#else
    return 0;
#endif
}

/// SHA-1 of whole 64-byte blocks: with the processor's SHA extensions unless `portable`.
static void sha1_blocks(uint32_t h[5], const uint8_t *p, size_t blocks, int portable) {
#if defined(__x86_64__)
    if (!portable && tidemark_sha1_accelerated()) {
        sha1_blocks_extensions(h, p, blocks);
        return;
    }
#endif
    for (; blocks > 0; blocks--, p += 64) sha1_block(h, p);
}

void tidemark_sha1_init(tidemark_sha1 *ctx) {
    static const uint32_t initial[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    memcpy(ctx->state, initial, sizeof initial);
    ctx->length = 0;
    ctx->used = 0;
    ctx->portable = 0;
}

void tidemark_sha1_init_portable(tidemark_sha1 *ctx) {
    tidemark_sha1_init(ctx);
    ctx->portable = 1;
}

void tidemark_sha1_update(tidemark_sha1 *ctx, const void *data, size_t length) {
    if (length == 0) return;
    const uint8_t *p = data;
    ctx->length += length;
    if (ctx->used > 0) {
        size_t take = 64 - ctx->used < length ? 64 - ctx->used : length;
        memcpy(ctx->buffer + ctx->used, p, take);
        ctx->used += take;
        p += take;
        length -= take;
        if (ctx->used < 64) return;
        sha1_blocks(ctx->state, ctx->buffer, 1, ctx->portable);
        ctx->used = 0;
    }
    sha1_blocks(ctx->state, p, length / 64, ctx->portable);
    p += length / 64 * 64;
    length %= 64;
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

void tidemark_object_id(int type, const void *data, size_t length, uint8_t digest[20]) {
    static const char *const names[] = {"", "commit", "tree", "blob", "tag"};
    char header[32];
    int headerLength = snprintf(header, sizeof header, "%s %zu", type >= 1 && type <= 4 ? names[type] : "", length);
    tidemark_sha1 ctx;
    tidemark_sha1_init(&ctx);
    tidemark_sha1_update(&ctx, header, (size_t)headerLength + 1);
    tidemark_sha1_update(&ctx, data, length);
    tidemark_sha1_final(&ctx, digest);
}

size_t tidemark_pack_entry_bound(size_t length) { return 16 + libdeflate_zlib_compress_bound(NULL, length); }

size_t tidemark_pack_entry_header(int type, size_t size, uint8_t out[10]) {
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

// Each thread keeps one compressor (about 200 KB at level 1) for the level it last used, freed
// when the thread ends: allocating one per object would cost more than compressing a 1 KB item.
typedef struct {
    int level;
    struct libdeflate_compressor *compressor;
} thread_compressor;

static pthread_key_t compressor_key;
static pthread_once_t compressor_key_once = PTHREAD_ONCE_INIT;

static void free_thread_compressor(void *value) {
    thread_compressor *held = value;
    libdeflate_free_compressor(held->compressor);
    free(held);
}

static void make_compressor_key(void) { pthread_key_create(&compressor_key, free_thread_compressor); }

static struct libdeflate_compressor *compressor_for(int level) {
    pthread_once(&compressor_key_once, make_compressor_key);
    thread_compressor *held = pthread_getspecific(compressor_key);
    if (held && held->compressor && held->level == level) return held->compressor;
    if (!held) {
        held = calloc(1, sizeof *held);
        if (!held || pthread_setspecific(compressor_key, held) != 0) {
            free(held);
            return NULL;
        }
    }
    libdeflate_free_compressor(held->compressor);
    held->compressor = libdeflate_alloc_compressor(level);
    held->level = level;
    return held->compressor;
}

size_t tidemark_pack_entry(int type, const void *data, size_t length, uint8_t *out, size_t capacity, int level) {
    if (capacity < 16) return 0;
    struct libdeflate_compressor *compressor = compressor_for(level);
    if (!compressor) return 0;
    size_t n = tidemark_pack_entry_header(type, length, out);
    size_t written = libdeflate_zlib_compress(compressor, data, length, out + n, capacity - n);
    return written ? n + written : 0;
}

uint32_t tidemark_crc32(const void *data, size_t length) {
    return libdeflate_crc32(0, data, length);
}

size_t tidemark_zlib_compress(const void *data, size_t length, uint8_t *out, size_t capacity, int level) {
    struct libdeflate_compressor *compressor = compressor_for(level);
    return compressor ? libdeflate_zlib_compress(compressor, data, length, out, capacity) : 0;
}

int tidemark_zlib_inflate_whole(const void *in, size_t in_length, void *out, size_t capacity, size_t *produced) {
    struct libdeflate_decompressor *decompressor = libdeflate_alloc_decompressor();
    if (!decompressor) return -1;
    size_t consumed = 0;
    *produced = 0;
    enum libdeflate_result result = libdeflate_zlib_decompress_ex(decompressor, in, in_length, out, capacity,
                                                                  &consumed, produced);
    libdeflate_free_decompressor(decompressor);
    if (result == LIBDEFLATE_INSUFFICIENT_SPACE) return 1;
    if (result != LIBDEFLATE_SUCCESS) return -1;
    return consumed == in_length ? 0 : 2;
}

int tidemark_zlib_inflate(const void *in, size_t in_length, void *out, size_t out_length) {
    struct libdeflate_decompressor *decompressor = libdeflate_alloc_decompressor();
    if (!decompressor) return -1;
    size_t consumed = 0, produced = 0;
    enum libdeflate_result result = libdeflate_zlib_decompress_ex(decompressor, in, in_length, out, out_length,
                                                                  &consumed, &produced);
    libdeflate_free_decompressor(decompressor);
    return result == LIBDEFLATE_SUCCESS && produced == out_length ? 0 : -1;
}
