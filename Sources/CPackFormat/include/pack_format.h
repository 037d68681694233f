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

/// Writes the type-and-size header of a pack entry (type 1-4 an object, 6 `OBJ_OFS_DELTA`);
/// returns its length (at most 10 bytes).
size_t tidemark_pack_entry_header(int type, size_t size, uint8_t out[10]);

/// The most bytes `tidemark_pack_entry` writes for `length` bytes of object data.
size_t tidemark_pack_entry_bound(size_t length);

/// Writes one undeltified pack entry: the type-and-size header, then the object data as a zlib
/// stream compressed at `level` (0-12, libdeflate's levels) in one pass. Returns the bytes written,
/// or 0 when `capacity` is too small or no compressor could be allocated.
size_t tidemark_pack_entry(int type, const void *data, size_t length, uint8_t *out, size_t capacity, int level);

/// Compresses `data` as one zlib stream at `level` (as `tidemark_pack_entry` does, without the
/// entry's header). Returns the bytes written, or 0 when `capacity` is too small (at least
/// `tidemark_pack_entry_bound(length)`) or no compressor could be allocated.
size_t tidemark_zlib_compress(const void *data, size_t length, uint8_t *out, size_t capacity, int level);

/// Inflates the zlib stream at the start of `in` (it may be followed by other bytes) into
/// `out`; 0 when it holds exactly `out_length` bytes, -1 when it does not or is corrupt.
int tidemark_zlib_inflate(const void *in, size_t in_length, void *out, size_t out_length);

/// Inflates the zlib stream at the start of `in` into `out` (up to `capacity` bytes), setting
/// `*produced`: 0 when it ends where `in` does, 2 when bytes follow it, 1 when `out` is too small,
/// -1 when it is cut short or corrupt. (libgit2 1.5 loops forever on a loose object whose stream
/// is cut short.)
int tidemark_zlib_inflate_whole(const void *in, size_t in_length, void *out, size_t capacity, size_t *produced);

/// The CRC-32 of `data`, zlib's (what a pack index records for each entry).
uint32_t tidemark_crc32(const void *data, size_t length);

#endif
