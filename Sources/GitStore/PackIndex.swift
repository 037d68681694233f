import CPackFormat

/// The index of a pack (`pack-<checksum>.idx`, version 2), byte for byte as `git index-pack`
/// writes it for the same pack: readers find an object's entry through it.
///
/// Layout: magic and version; 256 cumulative counts by first id byte; the ids, sorted; each
/// entry's CRC-32; each entry's offset in 31 bits, or, with the top bit set, the position of its
/// 64-bit offset in the table after; the pack's checksum; the SHA-1 of everything before it.
enum PackIndex {
    /// One object of a pack.
    struct Entry {
        /// The object's id.
        let id: ObjectID
        /// Where its entry starts in the pack file.
        let offset: UInt64
        /// The CRC-32 of its entry's bytes (header and zlib stream).
        let crc: UInt32
    }

    /// The index of a pack holding `entries` (each object once) whose trailer is `packChecksum`.
    static func encode(_ entries: [Entry], packChecksum: [UInt8]) -> [UInt8] {
        let sorted = entries.sorted { $0.id < $1.id }
        var out: [UInt8] = [0xFF, 0x74, 0x4F, 0x63, 0, 0, 0, 2]
        out.reserveCapacity(8 + 1024 + sorted.count * 28 + 40)
        var counts = [UInt32](repeating: 0, count: 256)
        for entry in sorted { counts[Int(entry.id.bytes[0])] += 1 }
        var total: UInt32 = 0
        for count in counts {
            total += count
            append32(total, to: &out)
        }
        for entry in sorted { out += entry.id.bytes }
        for entry in sorted { append32(entry.crc, to: &out) }
        var large: [UInt64] = []
        for entry in sorted {
            if entry.offset < 0x8000_0000 {
                append32(UInt32(entry.offset), to: &out)
            } else {
                append32(0x8000_0000 | UInt32(large.count), to: &out)
                large.append(entry.offset)
            }
        }
        for offset in large {
            append32(UInt32(offset >> 32), to: &out)
            append32(UInt32(truncatingIfNeeded: offset), to: &out)
        }
        out += packChecksum
        out += out.withUnsafeBytes { sha1($0) }
        return out
    }

    /// The SHA-1 of `bytes` (a pack's or an index's trailer), on the processor's SHA extensions
    /// where it has them.
    static func sha1(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var context = tidemark_sha1()
        tidemark_sha1_init(&context)
        tidemark_sha1_update(&context, bytes.baseAddress, bytes.count)
        var digest = [UInt8](repeating: 0, count: 20)
        tidemark_sha1_final(&context, &digest)
        return digest
    }

    private static func append32(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }
}
