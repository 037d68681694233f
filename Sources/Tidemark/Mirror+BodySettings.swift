import GitStore
import Upstreams

/// Items to download again because the settings that decide what is stored of an item
/// (`itemURL`, `bodyPath`, `ignoreField`) changed since they were stored: a `bodyPath` set after
/// the clone applied only to items changed later otherwise.
struct BodyReshape {
    /// Every listed item: the settings differ from those recorded.
    var all = false
    /// Items a fetch that reshaped did not store (failed, or not downloaded before an
    /// interruption), by collection.
    var pending: [String: Set<ItemID>] = [:]
    /// Collections whose every item waits: an interrupted fetch did not list them.
    var wholeCollections: Set<String> = []

    var isEmpty: Bool { !all && pending.isEmpty && wholeCollections.isEmpty }

    /// What waits, as `status` tells it; nil when nothing does.
    var waiting: StatusReport.ReshapePending? {
        all || !wholeCollections.isEmpty ? .everyItem : pending.isEmpty ? nil : .items(pending.values.map(\.count).reduce(0, +))
    }

    /// True when items of `collection` wait to be stored again: its listing must name every item
    /// with what it needs to be downloaded (a `dir` listing names the files it finds unchanged by
    /// position only), so it is made as if nothing were cached.
    func covers(_ collection: String) -> Bool {
        all || wholeCollections.contains(collection) || pending[collection] != nil
    }

    /// The items of `listing` (of `collection`) to download again, unconditionally.
    func items(of collection: String, in listing: Listing) -> Set<ItemID> {
        if all || wholeCollections.contains(collection) { return Set(listing.items.map(\.id)) }
        guard let waiting = pending[collection] else { return [] }
        return Set(listing.items.lazy.map(\.id).filter { waiting.contains($0) })
    }
}

extension Mirror {
    /// The settings that decide what is stored of an item (`itemURL`, `bodyPath` of `rest`, then
    /// each `ignoreField`), one `key=value` line each, as ``bodySettingsState`` records them; nil
    /// when there are none (another kind, no field left out).
    var bodySettings: String? {
        let configuration = settings.upstreamConfiguration
        let ignored = settings.ignoredFields.map { "\(Mirror.ignoreFieldKey)=\($0)\n" }.joined()
        guard configuration.kind == "rest" else { return ignored.isEmpty ? nil : ignored }
        return ["itemURL", "bodyPath"].map { "\($0)=\(configuration.options[$0] ?? "")\n" }.joined() + ignored
    }

    /// The key of a field left out in ``bodySettings``' lines.
    private static let ignoreFieldKey = "ignoreField"

    /// The fields left out of every stored item (`tidemark.ignoreField`).
    var ignoredFields: IgnoredFields { IgnoredFields(settings.ignoredFields) }

    /// ``bodySettings`` as a snapshot's `Tidemark-Body-Settings` trailer tags them: a 64-bit
    /// FNV-1a hash in hex (an `itemURL` may hold a key; a commit message holds no secret).
    var bodySettingsTag: String? { bodySettings.map(Mirror.tag) }

    /// `settings` (``bodySettings``' text) hashed for ``bodySettingsTag``.
    private static func tag(_ settings: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in settings.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// What the next fetch downloads again: every item when ``bodySettings`` differ from those
    /// recorded, else the items the fetch that recorded them did not store. Also every item
    /// when `base`, the snapshot the fetch builds on, is not the one this clone's last fetch
    /// recorded (pulled from another clone, or a `git clone`'s) and its trailer tags other
    /// settings. A mirror with no record and no such trailer (made before tidemark kept them)
    /// records them first.
    func bodyReshape(base: Commit?) -> BodyReshape {
        // None now: none of another kind than `rest` but the fields left out, which a record of
        // them tells (stored without those fields, items are stored again whole).
        // A snapshot tagged with settings (a `git clone`'s first, pulled from a clone leaving
        // fields out) is compared with these too.
        let recorded = readState(Mirror.bodySettingsState) ?? ""
        let baseTag = base.flatMap { SnapshotMessage.parse($0.message)?.bodySettings }
        guard bodySettings != nil || !recorded.isEmpty || baseTag != nil else { return BodyReshape() }
        let now = bodySettings ?? ""
        var settingsLines = ""
        var snapshot: String?
        var reshape = BodyReshape()
        for line in recorded.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            if line.hasPrefix(Mirror.snapshotPrefix) {
                snapshot = String(line.dropFirst(Mirror.snapshotPrefix.count))
                continue
            }
            if line.hasPrefix(Mirror.pendingCollectionPrefix) {
                reshape.wholeCollections.insert(String(line.dropFirst(Mirror.pendingCollectionPrefix.count)))
                continue
            }
            guard line.hasPrefix(Mirror.pendingPrefix) else {
                settingsLines += line + "\n"
                continue
            }
            let fields = line.dropFirst(Mirror.pendingPrefix.count).split(separator: "\t", maxSplits: 1).map(String.init)
            if fields.count == 2, let bytes = Manifest.unescape(Array(fields[1].utf8)[...]) {
                reshape.pending[fields[0], default: []].insert(ItemID(bytes: bytes))
            }
        }
        if let base, base.id.hex != snapshot, let tag = baseTag, tag != Mirror.tag(now) {
            return BodyReshape(all: true)
        }
        // No record: a mirror made before tidemark kept one, whose items follow the settings
        // then, or one whose fields left out (which tidemark had not then) were all added since.
        if recorded.isEmpty {
            return settings.ignoredFields.isEmpty ? reshape : BodyReshape(all: true)
        }
        return settingsLines == now ? reshape : BodyReshape(all: true)
    }

    /// Records ``bodySettings`` as those the stored items of `snapshot` (the upstream-tracking
    /// commit a fetch left) follow, but for `pending` and the items of `wholeCollections`.
    func recordBodySettings(snapshot: ObjectID?, pending: [(collection: String, id: ItemID)],
                            wholeCollections: [String]) throws(MirrorError) {
        // Kept once written, empty when none apply any more: it tells what the items follow.
        guard bodySettings != nil || readState(Mirror.bodySettingsState) != nil else { return }
        let now = bodySettings ?? ""
        let lines = (snapshot.map { [Mirror.snapshotPrefix + $0.hex + "\n"] } ?? []) + pending.map { item in
            var id: [UInt8] = []
            Manifest.escape(item.id.bytes, leadingHash: false, into: &id)
            return Mirror.pendingPrefix + item.collection + "\t" + String(decoding: id, as: UTF8.self) + "\n"
        } + wholeCollections.map { Mirror.pendingCollectionPrefix + $0 + "\n" }
        try writeState(Mirror.bodySettingsState, now + lines.joined(), durable: false)
    }

    /// How a line of ``bodySettingsState`` naming an item still to reshape starts.
    private static let pendingPrefix = "pending\t"
    /// How one naming a collection whose every item is still to reshape starts.
    private static let pendingCollectionPrefix = "pending-collection\t"
    /// How the line naming the snapshot recorded starts.
    private static let snapshotPrefix = "snapshot\t"
}
