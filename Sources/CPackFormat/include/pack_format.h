#ifndef TIDEMARK_PACK_FORMAT_H
#define TIDEMARK_PACK_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/// Incremental SHA-1 (FIPS 180-4): object ids and the trailer of a pack file. It uses the
/// processor's SHA extensions where it has them (x86-64), portable C elsewhere.
typedef struct {
    uint32_t state[5];
    uint64_t length;
    uint8_t buffer[64];
    size_t used;
    int portable;
} tidemark_sha1;

void tidemark_sha1_init(tidemark_sha1 *ctx);
/// Like `tidemark_sha1_init`, but the context never uses the SHA extensions (for tests).
void tidemark_sha1_init_portable(tidemark_sha1 *ctx);
/// 1 when SHA-1 runs on the processor's SHA extensions.
int tidemark_sha1_accelerated(void);
void tidemark_sha1_update(tidemark_sha1 *ctx, const void *data, size_t length);
void tidemark_sha1_final(tidemark_sha1 *ctx, uint8_t digest[20]);

/// The id git gives an object of `type` (1 commit, 2 tree, 3 blob, 4 tag) holding `data`: the
/// SHA-1 of "<type> <length>\0" followed by the data.
void tidemark_object_id(int type, const void *data, size_t length, uint8_t digest[20]);

/// The most bytes `tidemark_pack_entry` writes for `length` bytes of object data.
size_t tidemark_pack_entry_bound(size_t length);

/// Writes one undeltified pack entry: the type-and-size header, then the object data as a zlib
/// stream compressed at `level` (0-9). Returns the bytes written, or 0 when `capacity` is too small
/// or zlib fails.
size_t tidemark_pack_entry(int type, const void *data, size_t length, uint8_t *out, size_t capacity, int level);

/// The start of a pack entry whose zlib stream is compressed in parts: the type-and-size header,
/// then the zlib header for `level`. Returns the bytes written (at most 12).
size_t tidemark_pack_entry_head(int type, size_t length, uint8_t out[16], int level);

/// The most bytes `tidemark_deflate_part` writes for `length` bytes.
size_t tidemark_deflate_part_bound(size_t length);

/// Compresses one part of an object as raw deflate data that continues the parts before it:
/// `history` (the bytes just before this part, of which the last 32 KiB are used) primes the
/// window, and the part ends on a byte boundary (a sync flush), or with the final block when
/// `last`. Parts made this way, concatenated between `tidemark_pack_entry_head` and the adler-32
/// of the whole object (big-endian), form one zlib stream, as pigz makes them. Returns the bytes
/// written, or 0 when `capacity` is too small or zlib fails.
size_t tidemark_deflate_part(const void *data, size_t length, const void *history, size_t history_length,
                             int last, uint8_t *out, size_t capacity, int level);

/// zlib's adler-32 of `data`.
uint32_t tidemark_adler32(const void *data, size_t length);

/// zlib's CRC-32 of `data` (what a pack index records for each entry).
uint32_t tidemark_crc32(const void *data, size_t length);

#endif
