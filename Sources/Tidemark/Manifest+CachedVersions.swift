import Upstreams

/// A manifest with a hash index over its ids: what an adapter is given as the cached versions of
/// a collection, and what a fetch plan looks ids up in. Positions are indexes into
/// ``Manifest/entries``.
///
/// A binary search over 100k entries touches about 17 of them, scattered in memory; the index
/// is one table of positions, so a lookup costs one or two probes and one comparison of ids.
struct IndexedManifest: CachedVersions {
    let manifest: Manifest
    /// Open addressing with linear probing: a position in `entries`, or -1 for an empty slot.
    private let slots: [Int32]
    private let mask: Int

    init(_ manifest: Manifest) {
        self.manifest = manifest
        let entries = manifest.entries
        var size = 16
        while size < entries.count * 2 { size <<= 1 }
        var slots = [Int32](repeating: -1, count: size)
        let mask = size - 1
        for (position, entry) in entries.enumerated() {
            var slot = IndexedManifest.hash(entry.id) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(position)
        }
        self.slots = slots
        self.mask = mask
    }

    var entries: [ManifestEntry] { manifest.entries }
    var count: Int { manifest.entries.count }

    func position(of id: ItemID) -> Int? {
        var slot = IndexedManifest.hash(id) & mask
        while true {
            let position = Int(slots[slot])
            if position < 0 { return nil }
            if manifest.entries[position].id == id { return position }
            slot = (slot + 1) & mask
        }
    }

    func id(at position: Int) -> ItemID { manifest.entries[position].id }

    func etag(at position: Int) -> String? {
        let etag = manifest.entries[position].etag
        return etag.isEmpty ? nil : etag
    }

    /// FNV-1a over the id's bytes: ids are short, and the table needs no seed (it lives for one
    /// operation and its keys come from our own manifest).
    private static func hash(_ id: ItemID) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        id.bytes.withUnsafeBufferPointer { bytes in
            for byte in bytes {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }
        return Int(truncatingIfNeeded: hash ^ (hash >> 29))
    }
}
