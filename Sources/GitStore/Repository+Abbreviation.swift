import Foundation

extension Repository {
    /// How many hex digits of an object name git shows (`core.abbrev`): the number set (4 to
    /// 40); all 40 for `no` or `false`; else, for `auto`, unset or a number out of range (which
    /// git refuses), as git works it out: half the bits of the number of objects in packs,
    /// rounded up, and at least 7 (9 for a 100k-item mirror's 140,000 objects). git also makes
    /// a name longer where its prefix is ambiguous, and counts a multi-pack-index's objects
    /// once; libgit2 writes the length it is given, and the packs' objects are added up here.
    ///
    /// libgit2 1.5 shows 7 unless told, and fails a patch on `core.abbrev = auto` or `no`
    /// ("failed to map 'auto'"), both valid to git.
    public func abbreviationLength() -> Int {
        let setting = (try? configString("core.abbrev"))?.lowercased()
        switch setting {
        case nil, "auto": break
        case "no", "false", "off", "": return 40
        default:
            // Read as git reads an integer (`0x10`, `010`, ` 12`), through libgit2's parser.
            if let length = (try? configInteger("core.abbrev")).flatMap({ $0 }), (4...40).contains(length) { return Int(length) }
        }
        // git's `repo_approximate_object_count` (packed objects, no loose ones), then
        // `find_unique_abbrev_r`'s length for it.
        let count = StoredPack.indexPaths(in: commonDirectory).reduce(0) { $0 + Self.objectCount(ofPackIndex: $1) }
        var bits = 0
        var rest = count
        while rest > 1 { rest >>= 1; bits += 1 }
        return max(7, (bits + 2) / 2)
    }

    /// The number of objects a pack index lists (the last fan-out entry); 0 when it cannot be read.
    private static func objectCount(ofPackIndex path: String) -> Int {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        // Version 2: the magic `\377tOc`, a 4-byte version, then 256 fan-out words; version 1:
        // the fan-out first.
        var magic: UInt32 = 0
        guard pread(descriptor, &magic, 4, 0) == 4 else { return 0 }
        var word: UInt32 = 0
        let fanOut = UInt32(bigEndian: magic) == 0xFF74_4F63 ? 8 : 0
        guard pread(descriptor, &word, 4, off_t(fanOut + 255 * 4)) == 4 else { return 0 }
        return Int(UInt32(bigEndian: word))
    }
}
