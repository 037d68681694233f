import CPackFormat
import Foundation

/// One of the repository's packs (`objects/pack/pack-*.pack`) with its version 2 index, read
/// directly: libgit2 reads objects, but has no API that tells where one is stored, which a pack
/// that reuses an entry's bytes needs (as `git pack-objects` reuses them).
///
/// The index is mapped; the pack is read with `pread`. Anything not laid out as git writes it
/// makes the lookups answer nil, never trap.
final class StoredPack {
    /// The pack file's path.
    let path: String
    private let descriptor: Int32
    /// The pack file's size, trailer included.
    let size: Int
    private let index: UnsafeRawBufferPointer
    /// The number of objects it holds.
    let count: Int

    private init(path: String, descriptor: Int32, size: Int, index: UnsafeRawBufferPointer, count: Int) {
        self.path = path
        self.descriptor = descriptor
        self.size = size
        self.index = index
        self.count = count
    }

    /// Opens the pack whose index is `indexPath`; nil when either file is missing or malformed.
    static func open(indexPath: String) -> StoredPack? {
        guard indexPath.hasSuffix(".idx"), let index = map(indexPath) else { return nil }
        let path = String(indexPath.dropLast(4)) + ".pack"
        // Magic, version 2, 256 cumulative counts, then per object an id, a CRC and an offset,
        // then the large offsets, the pack's checksum and the index's.
        func word(_ at: Int) -> Int { Int(UInt32(bigEndian: index.loadUnaligned(fromByteOffset: at, as: UInt32.self))) }
        var descriptor: Int32 = -1
        if index.count >= 8 + 1024 + 40, word(0) == 0xFF74_4F63, word(4) == 2,
           case let count = word(8 + 255 * 4), index.count >= 8 + 1024 + count * 28 + 40 {
            descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            var info = stat()
            var header = [UInt8](repeating: 0, count: 8)
            if descriptor >= 0, fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= 12 + 20,
               pread(descriptor, &header, 8, 0) == 8, header == Array("PACK".utf8) + [0, 0, 0, 2] {
                return StoredPack(path: path, descriptor: descriptor, size: Int(info.st_size), index: index, count: count)
            }
        }
        if descriptor >= 0 { close(descriptor) }
        munmap(UnsafeMutableRawPointer(mutating: index.baseAddress), index.count)
        return nil
    }

    deinit {
        close(descriptor)
        munmap(UnsafeMutableRawPointer(mutating: index.baseAddress), index.count)
    }

    /// The index files of the repository's packs (`gitDirectory` ends with `/`). Open them one at a
    /// time: each open pack holds a descriptor, and a repository may have hundreds of packs
    /// while other threads need descriptors too.
    static func indexPaths(in gitDirectory: String) -> [String] {
        let folder = gitDirectory + "objects/pack/"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasPrefix("pack-") && $0.hasSuffix(".idx") }.map { folder + $0 }
    }

    private static func map(_ path: String) -> UnsafeRawBufferPointer? {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { return nil }
        guard let address = mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED else {
            return nil
        }
        return UnsafeRawBufferPointer(start: address, count: Int(info.st_size))
    }

    private func word(_ at: Int) -> UInt32 { UInt32(bigEndian: index.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }

    /// The position of `id` in the index, if the pack holds it.
    func position(of id: ObjectID) -> Int? {
        let first = Int(id.bytes[0])
        var low = first == 0 ? 0 : Int(word(8 + (first - 1) * 4)), high = Int(word(8 + first * 4))
        guard low <= high, high <= count else { return nil }
        return id.bytes.withUnsafeBytes { wanted in
            while low < high {
                let middle = (low + high) / 2
                let order = memcmp(index.baseAddress! + 1032 + middle * 20, wanted.baseAddress!, 20)
                if order == 0 { return middle }
                if order < 0 { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }

    /// The id at `position`.
    func id(at position: Int) -> ObjectID {
        ObjectID(digest: Array(UnsafeRawBufferPointer(rebasing: index[(1032 + position * 20)..<(1032 + position * 20 + 20)])))
    }

    /// The CRC-32 of the entry at `position`.
    func crc(at position: Int) -> UInt32 { word(1032 + count * 20 + position * 4) }

    /// Where the entry at `position` starts in the pack; nil when the index points outside it.
    func offset(at position: Int) -> Int? {
        let small = word(1032 + count * 24 + position * 4)
        var offset = Int(small)
        if small & 0x8000_0000 != 0 {
            let at = 1032 + count * 28 + Int(small & 0x7FFF_FFFF) * 8
            guard at + 8 <= index.count - 40 else { return nil }
            offset = Int(word(at)) << 32 | Int(word(at + 4))
        }
        return offset >= 12 && offset < size - 20 ? offset : nil
    }

    /// The entry that starts at `offset`, and where it ends: where the next entry starts, or the
    /// trailer. Scans every offset of the index.
    func entry(at offset: Int) -> (position: Int, end: Int)? {
        var position: Int?
        var end = size - 20
        for candidate in 0..<count {
            guard let other = self.offset(at: candidate) else { return nil }
            if other == offset { position = candidate } else if other > offset, other < end { end = other }
        }
        return position.map { ($0, end) }
    }

    /// The bytes of the pack in `range`; nil when it cannot read them all.
    func read(_ range: Range<Int>) -> [UInt8]? {
        guard range.lowerBound >= 0, range.upperBound <= size else { return nil }
        var bytes = [UInt8](repeating: 0, count: range.count)
        var done = 0
        while done < range.count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, range.count - done, off_t(range.lowerBound + done)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }
}

/// The header of a pack entry: its type (1-4 an object, 6 `OBJ_OFS_DELTA`, 7 `OBJ_REF_DELTA`), the
/// size of what its zlib stream holds, where that stream starts, and for `OBJ_OFS_DELTA` where
/// the base's entry starts.
struct PackEntryHeader {
    static let offsetDelta = 6

    let type: Int
    let size: Int
    let length: Int
    let baseOffset: Int?

    /// The header of an `OBJ_OFS_DELTA` entry whose delta has `size` bytes and whose base entry
    /// starts `distance` bytes before it.
    static func offsetDelta(size: Int, distance: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 10)
        out.removeLast(10 - tidemark_pack_entry_header(Int32(offsetDelta), size, &out))
        // Big-endian groups of 7 bits, each group but the last one less than it says (so every
        // distance has one encoding), as git writes it.
        var groups = [UInt8(distance & 0x7f)]
        var left = distance >> 7
        while left > 0 {
            left -= 1
            groups.append(0x80 | UInt8(left & 0x7f))
            left >>= 7
        }
        return out + groups.reversed()
    }

    /// Parses the header at the start of `bytes`, the entry that starts at `offset`.
    init?(_ bytes: ArraySlice<UInt8>, offset: Int) {
        var at = bytes.startIndex
        guard at < bytes.endIndex else { return nil }
        var byte = Int(bytes[at])
        at += 1
        type = (byte >> 4) & 7
        var size = byte & 0x0f, shift = 4
        while byte & 0x80 != 0 {
            guard at < bytes.endIndex, shift < 57 else { return nil }
            byte = Int(bytes[at])
            at += 1
            size |= (byte & 0x7f) << shift
            shift += 7
        }
        self.size = size
        if type == PackEntryHeader.offsetDelta {
            guard at < bytes.endIndex else { return nil }
            byte = Int(bytes[at])
            at += 1
            var distance = byte & 0x7f
            while byte & 0x80 != 0 {
                guard at < bytes.endIndex, distance < 1 << 48 else { return nil }
                byte = Int(bytes[at])
                at += 1
                distance = (distance + 1) << 7 | (byte & 0x7f)
            }
            guard distance > 0, distance <= offset - 12 else { return nil }
            baseOffset = offset - distance
        } else {
            baseOffset = nil
        }
        length = at - bytes.startIndex
    }
}
