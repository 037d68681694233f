// libFuzzer entry point for the manifest parser and table (Sources/Tidemark/Manifest.swift,
// ManifestTable.swift), compiled together with those files by `make fuzz`.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func manifestFuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzManifest.check(Data(bytes: data, count: size))
    return 0
}

enum FuzzManifest {
    static func check(_ data: Data) {
        // Any bytes: if they parse, rendering and parsing again gives the same manifest.
        let parsed = try? Manifest.parse(data)
        if let parsed {
            guard let again = try? Manifest.parse(parsed.serialized()) else {
                preconditionFailure("a parsed manifest renders to text that does not parse")
            }
            precondition(again == parsed, "parse(render(parse(x))) != parse(x)")
        }
        // The table a fetch uses accepts exactly what the parser accepts, with the same entries.
        let table = try? ManifestTable(data)
        precondition((table == nil) == (parsed == nil), "ManifestTable and Manifest.parse disagree on validity")
        if let table, let parsed {
            precondition(table.count == parsed.entries.count, "ManifestTable count differs")
            for (position, entry) in parsed.entries.enumerated() {
                precondition(table.entry(at: position) == entry && table.position(of: entry.id) == position
                             && table.id(at: position) == entry.id && (table.etag(at: position) ?? "") == entry.etag,
                             "ManifestTable entry \(position) differs")
            }
            // Unchanged lines are copied as they are (not re-escaped), so compare what they say.
            precondition((try? Manifest.parse(table.updating([]))) == parsed, "ManifestTable re-renders differently")
            // The runs a splice says it copied (what a delta against this manifest copies) hold
            // this manifest's bytes there.
            let removing = stride(from: 0, to: table.count, by: 3).map { $0 }
            let (spliced, copies) = table.splicing(Array(parsed.entries.prefix(2)), removing: removing)
            var end = 0
            for copy in copies {
                precondition(copy.target >= end && copy.source + copy.count <= table.bytes.count
                             && spliced[copy.target..<copy.target + copy.count] == Data(table.bytes[copy.source..<copy.source + copy.count]),
                             "a splice's copied run is not the old bytes")
                end = copy.target + copy.count
            }
            precondition(end <= spliced.count, "a splice's copied run is past its end")
        }
        // The bytes as entries (fields split at 0xFF, entries at 0xFE): parse(render(x)) == x.
        let manifest = entries(from: [UInt8](data))
        guard let parsed = try? Manifest.parse(manifest.serialized()) else {
            preconditionFailure("a rendered manifest does not parse")
        }
        precondition(parsed == manifest, "parse(render(x)) != x")
    }

    /// Entries made of arbitrary bytes: any id bytes (distinct, non-empty), any text fields.
    static func entries(from bytes: [UInt8]) -> Manifest {
        var seen = Set<ItemID>()
        var entries: [ManifestEntry] = []
        for chunk in bytes.split(separator: 0xFE, omittingEmptySubsequences: false) {
            let fields = chunk.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
            guard let id = fields.first, !id.isEmpty, seen.insert(ItemID(bytes: id)).inserted else { continue }
            func text(_ index: Int) -> String { index < fields.count ? String(decoding: fields[index], as: UTF8.self) : "" }
            let path = text(3).isEmpty ? "p" : text(3)
            entries.append(ManifestEntry(id: ItemID(bytes: id), lastModified: text(1), etag: text(2), path: path))
        }
        return Manifest(entries: entries)
    }
}
