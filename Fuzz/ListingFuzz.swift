// libFuzzer entry point for the adapters' listing decoding: the JSON parser (JSONValue), the
// version field (Timestamp) and the page accumulator (ListingAccumulator), compiled together
// with those Sources/Upstreams files by `make fuzz` (see Fuzz/README.md).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func listingFuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    FuzzListing.check(bytes)
    return 0
}

enum FuzzListing {
    static func check(_ bytes: Data) {
        // Any text as a lastModified: a parsed timestamp keeps the text and a valid instant.
        let text = String(decoding: bytes.prefix(64), as: UTF8.self)
        if let time = Timestamp(text) {
            precondition(time.raw == text, "Timestamp lost its raw text")
            precondition((0..<1_000_000_000).contains(time.nanoseconds), "nanoseconds out of range")
            precondition(Timestamp(time.raw) == time, "Timestamp is not stable")
        }
        guard let value = try? JSONValue.parse(bytes) else { return }
        // Serializing and parsing again gives the same value, numbers as written, and the same bytes.
        let serialized = value.serialized()
        if let again = try? JSONValue.parse(serialized) {
            precondition(again == value, "JSONValue does not round-trip")
            precondition(again.serialized() == serialized, "the serialized form is not stable")
        } else {
            preconditionFailure("serialized JSONValue does not parse")
        }
        // Decode rows as the adapters do, in pages of up to three: an id repeated on one page
        // with another version is an error (the listing stops there), one repeated on a later page
        // keeps the newer version.
        guard case .object(let fields) = value else { return }
        let rows: [JSONValue]
        switch fields["envelopeTemplates"] ?? fields["items"] {
        case .array(let array)?: rows = array
        default: rows = fields.members.compactMap { if case .array(let a) = $0.value { a } else { nil } }.first ?? []
        }
        var listed: [ListedItem] = []
        for (position, row) in rows.enumerated() {
            guard case .object(let item) = row else { continue }
            guard let id = (item["templateId"] ?? item["id"])?.stringValue, !id.isEmpty else { continue }
            guard let version = try? listedVersion(item["lastModified"] ?? item["modified_gmt"], collection: "fuzz",
                                                   item: "\(id) (#\(position))", field: "lastModified", redact: { $0 }) else { continue }
            listed.append(ListedItem(id: ItemID(id), lastModified: version))
        }
        var accumulator = ListingAccumulator(collection: "fuzz", maxItems: 1_000_000)
        var newest: [ItemID: Timestamp] = [:]
        for start in stride(from: 0, to: listed.count, by: 3) {
            let page = Array(listed[start..<min(start + 3, listed.count)])
            let before = accumulator.count
            do {
                try accumulator.add(page: page)
            } catch {
                precondition(accumulator.count <= before + page.count)
                break
            }
            precondition(accumulator.count <= before + page.count)
            for item in page where newest[item.id].map({ item.lastModified > $0 }) ?? true { newest[item.id] = item.lastModified }
        }
        precondition(Set(accumulator.items.map(\.id)).count == accumulator.items.count, "an id was kept twice")
        for item in accumulator.items where newest[item.id].map({ $0 > item.lastModified }) == true {
            preconditionFailure("an older version was kept")
        }
    }
}
