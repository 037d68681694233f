import Foundation

/// git's multi-pack-index (`objects/pack/multi-pack-index`), which lists packs by name: a pack
/// it lists must stay, or git fails to load it (`git fsck`, every read through the index).
/// tidemark never writes one; while one exists (or is being written) no pack is removed.
enum MultiPackIndex {
    /// The files of a multi-pack-index in a pack folder: the index, the lock git writes it
    /// under (it lists the packs before it takes the lock, and renames the lock into place
    /// last), and the folder of an incremental chain.
    static let files = ["multi-pack-index", "multi-pack-index.lock", "multi-pack-index.d"]

    /// True when `folder` (ending in `/`) holds any of ``files``.
    static func isPresent(in folder: String) -> Bool {
        files.contains { access(folder + $0, F_OK) == 0 }
    }

    /// The `.idx` names the multi-pack-index of `folder` lists that are missing from it; nil when
    /// there is no index (or one of another format, which is left to git).
    static func missingPacks(in folder: String) -> [String]? {
        guard let names = packNames(at: folder + "multi-pack-index") else { return nil }
        return names.filter { access(folder + $0, F_OK) != 0 }
    }

    /// The pack names (`pack-<hex>.idx`) of the index at `path`, from its `PNAM` chunk; nil when
    /// it cannot be read as version 1.
    static func packNames(at path: String) -> [String]? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.read(upToCount: count), data.count == count
            else { return nil }
            return [UInt8](data)
        }
        // Header: "MIDX", version 1, hash version, chunk count, base count, pack count.
        guard let header = read(0, 12), header[0..<4].elementsEqual("MIDX".utf8), header[4] == 1 else { return nil }
        let chunks = Int(header[6])
        let packs = header[8..<12].reduce(0) { $0 << 8 | Int($1) }
        // The chunk table: each chunk's id and offset, then a terminating entry's offset.
        guard let table = read(12, (chunks + 1) * 12) else { return nil }
        func word(_ at: Int, _ size: Int) -> UInt64 { table[at..<at + size].reduce(0) { $0 << 8 | UInt64($1) } }
        for chunk in 0..<chunks where word(chunk * 12, 4) == 0x504E_414D {  // "PNAM"
            let start = word(chunk * 12 + 4, 8), end = word(chunk * 12 + 16, 8)
            guard end > start, end - start < 1 << 24, let bytes = read(start, Int(end - start)) else { return nil }
            let names = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return names.count == packs ? names : nil
        }
        return nil
    }
}
