@testable import Tidemark
import Upstreams

extension Manifest {
    /// This manifest with `upserts` put in (replacing entries of the same id; the last of several
    /// upserts of one id wins) and the ids in `removing` taken out, merged entry by entry: the
    /// reference model `ManifestTable.updating` (which merges lines of bytes) is checked against.
    func updating(_ upserts: [ManifestEntry], removing: Set<ItemID> = []) -> Manifest {
        guard !upserts.isEmpty || !removing.isEmpty else { return self }
        let incoming = upserts.sorted { $0.id < $1.id }
        var merged: [ManifestEntry] = []
        merged.reserveCapacity(entries.count + incoming.count)
        var i = 0, j = 0
        while i < entries.count || j < incoming.count {
            let take: ManifestEntry
            if j == incoming.count || (i < entries.count && entries[i].id < incoming[j].id) {
                take = entries[i]
                i += 1
            } else {
                if i < entries.count && entries[i].id == incoming[j].id { i += 1 }  // replaced
                // The last of several upserts of one id wins (the sort is stable).
                while j + 1 < incoming.count && incoming[j + 1].id == incoming[j].id { j += 1 }
                take = incoming[j]
                j += 1
            }
            if !removing.contains(take.id) { merged.append(take) }
        }
        return Manifest(entries: merged)
    }
}
