import Foundation

extension Repository {
    /// How many hex digits of an object name git shows (`core.abbrev`): the number set (4 to
    /// 40); all 40 for `no` or `false`; else, for `auto` or unset, as git works it out: half
    /// the bits of the number of objects in packs, rounded up, and at least 7 (9 for a 100k-item
    /// mirror's 140,000 objects).
    ///
    /// libgit2 1.5 shows 7 unless told, and fails a patch on `core.abbrev = auto` or `no`
    /// ("failed to map 'auto'"), both valid to git.
    public func abbreviationLength() -> Int {
        let setting = (try? configString("core.abbrev"))?.lowercased()
        switch setting {
        case nil, "auto": break
        case "no", "false", "off", "": return 40
        default: if let length = Int(setting!), (4...40).contains(length) { return length }
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
        var word: UInt32 = 0
        // Version 2: 4-byte magic, 4-byte version, then 256 fan-out words.
        guard pread(descriptor, &word, 4, 8 + 255 * 4) == 4 else { return 0 }
        return Int(UInt32(bigEndian: word))
    }
}
