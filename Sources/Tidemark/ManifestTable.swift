import Foundation
import GitStore
import Upstreams

/// A manifest file kept as its bytes, with where each entry line is and a hash index of the ids:
/// what a fetch works on.
///
/// A fetch looks every listed item up, compares validators, and writes the new manifest by
/// splicing the lines of the items that changed into the old bytes. Only those lines are
/// decoded (``entry(at:)``), so the unchanged majority of a 100k-item manifest costs one pass
/// over its bytes instead of four allocations per entry. Loading validates what
/// ``Manifest/parse(_:)`` validates. Positions are entry indexes, in id order.
struct ManifestTable: CachedVersions {
    /// The file's bytes.
    let bytes: [UInt8]
    /// Where each entry line's fields are, in one record per line: a lookup touches one.
    private let lines: [Line]
    /// The hash index: open addressing with linear probing. A slot holds the high half of its
    /// id's hash and position + 1 (0 for an empty slot), so a probe that meets another id
    /// mostly tells so without reading that entry.
    private let slots: [UInt64]
    private let mask: Int

    /// An empty manifest.
    init() {
        try! self.init(Data())  // an empty file has no line to reject
    }

    init(_ data: Data) throws(Manifest.ParseError) {
        try self.init(bytes: [UInt8](data))
    }

    /// The table of the manifest file `bytes`, kept as they are (no copy).
    init(bytes: [UInt8]) throws(Manifest.ParseError) {
        var lines: [Line] = []
        lines.reserveCapacity(bytes.count / 64)
        let result = bytes.withUnsafeBufferPointer { (buffer) -> Result<Void, Manifest.ParseError> in
            Result { () throws(Manifest.ParseError) in
                var start = 0, number = 0
                var previous: (id: Range<Int>, escaped: Bool)?
                while start < buffer.count {
                    let end = ManifestTable.find(10, in: buffer, from: start, to: buffer.count) ?? buffer.count
                    number += 1
                    defer { start = end + 1 }
                    if end == start { continue }
                    if buffer[start] == 35 {  // '#'
                        if number == 1, !buffer[start..<end].starts(with: "# tidemark manifest 1".utf8) {
                            throw Manifest.ParseError(line: number, reason: "unknown manifest version")
                        }
                        continue
                    }
                    let fields = try ManifestTable.check(buffer, start..<end, number: number)
                    let id = start..<fields.idEnd
                    if let previous, ManifestTable.compare(buffer, previous.id, previous.escaped,
                                                           buffer, id, fields.escaped) >= 0 {
                        throw Manifest.ParseError(line: number, reason: "ids are not sorted or repeat")
                    }
                    previous = (id, fields.escaped)
                    lines.append(Line(start: Int32(start), idEnd: Int32(fields.idEnd), end: Int32(end),
                                      etagStart: Int32(fields.etag.lowerBound), etagEnd: Int32(fields.etag.upperBound),
                                      escaped: fields.escaped))
                }
            }
        }
        try result.get()
        var size = 16
        while size < lines.count * 2 { size <<= 1 }
        var slots = [UInt64](repeating: 0, count: size)
        bytes.withUnsafeBufferPointer { buffer in
            for (position, line) in lines.enumerated() {
                let hash = ManifestTable.withID(buffer, line.id, line.escaped) { ManifestTable.hash($0) }
                var slot = Int(truncatingIfNeeded: hash) & (size - 1)
                while slots[slot] != 0 { slot = (slot + 1) & (size - 1) }
                slots[slot] = hash & ManifestTable.highHalf | UInt64(position + 1)
            }
        }
        self.bytes = bytes
        self.lines = lines
        self.slots = slots
        self.mask = size - 1
    }

    /// Entries.
    var count: Int { lines.count }

    func position(of id: ItemID) -> Int? {
        id.bytes.withUnsafeBufferPointer { position(ofIDBytes: $0) }
    }

    func position(ofIDBytes wanted: UnsafeBufferPointer<UInt8>) -> Int? {
        position(ofIDBytes: wanted, hash: ManifestTable.hash(wanted))
    }

    private func position(ofIDBytes wanted: UnsafeBufferPointer<UInt8>, hash: UInt64) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            slots.withUnsafeBufferPointer { slots in
                var slot = Int(truncatingIfNeeded: hash) & mask
                while case let value = slots[slot], value != 0 {
                    if value & ManifestTable.highHalf == hash & ManifestTable.highHalf {
                        let position = Int(truncatingIfNeeded: value & ~ManifestTable.highHalf) - 1
                        let line = lines[position]
                        if ManifestTable.withID(buffer, line.id, line.escaped, { ManifestTable.compare($0, wanted) == 0 }) {
                            return position
                        }
                    }
                    slot = (slot + 1) & mask
                }
                return nil
            }
        }
    }

    /// ``position(ofIDBytes:)`` of many ids (`ranges` of `names`), in passes: every id's first
    /// slot, then the lines those slots name, then the comparisons. Within one lookup each read
    /// waits for the one before (slot, line record, bytes); across ids in a pass they do not, so
    /// the processor overlaps their cache misses (a `dir` listing looks up 100k ids).
    func positions(ofIDBytes names: UnsafeBufferPointer<UInt8>, _ ranges: [Range<Int>]) -> [Int?] {
        let hashes = ranges.map { ManifestTable.hash(UnsafeBufferPointer(rebasing: names[$0])) }
        return bytes.withUnsafeBufferPointer { buffer in
            slots.withUnsafeBufferPointer { slots in
                lines.withUnsafeBufferPointer { lines in
                    let first = hashes.map { slots[Int(truncatingIfNeeded: $0) & mask] }
                    // The line a first slot names when its hash half matches, with the first byte
                    // of its id: a quick check before the comparison, and that byte's read overlapped.
                    var candidates = [(position: Int, lead: UInt8)](repeating: (-1, 0), count: ranges.count)
                    for index in ranges.indices {
                        let value = first[index]
                        guard value != 0, value & ManifestTable.highHalf == hashes[index] & ManifestTable.highHalf else { continue }
                        let position = Int(truncatingIfNeeded: value & ~ManifestTable.highHalf) - 1
                        let start = Int(lines[position].start)
                        candidates[index] = (position, start < buffer.count ? buffer[start] : 0)
                    }
                    return ranges.indices.map { (index) -> Int? in
                        let wanted = UnsafeBufferPointer(rebasing: names[ranges[index]])
                        let (position, lead) = candidates[index]
                        if position >= 0, !wanted.isEmpty, lead == wanted[0], !lines[position].escaped,
                           ManifestTable.compare(UnsafeBufferPointer(rebasing: buffer[lines[position].id]), wanted) == 0 {
                            return position
                        }
                        // Not the first slot's id (a probe goes on), nothing there, or an escaped id.
                        if first[index] == 0 { return nil }
                        return self.position(ofIDBytes: wanted, hash: hashes[index])
                    }
                }
            }
        }
    }

    func id(at position: Int) -> ItemID {
        bytes.withUnsafeBufferPointer { buffer in
            ManifestTable.withID(buffer, lines[position].id, lines[position].escaped) { ItemID(bytes: Array($0)) }
        }
    }

    func etag(at position: Int) -> String? {
        etagUTF8(at: position).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The validator's bytes without making a String: the `dir` adapter compares 100k of them.
    func etagUTF8(at position: Int) -> ArraySlice<UInt8>? {
        let line = lines[position]
        let field = bytes[Int(line.etagStart)..<Int(line.etagEnd)]
        if field.isEmpty { return nil }
        return line.escaped && field.contains(37) ? Manifest.unescape(field).map { ArraySlice($0) } : field
    }

    /// The entry at `position`, decoded.
    func entry(at position: Int) -> ManifestEntry {
        do {
            return try Manifest.parseLine(bytes[lines[position].range], number: position + 2)
        } catch {
            preconditionFailure("manifest line \(position + 2) was validated when it was loaded: \(error)")
        }
    }

    /// The manifest file with `upserts` put in (replacing entries of the same id; the last of
    /// several upserts of one id wins) and the entries at `removing` taken out. Unchanged lines
    /// are copied as runs of bytes.
    func updating(_ upserts: [ManifestEntry], removing: [Int] = []) -> Data {
        splicing(upserts, removing: removing).data
    }

    /// ``updating(_:removing:)``'s file, with the runs of it that are this file's bytes (which
    /// let the blob be stored as a delta against this one).
    func splicing(_ upserts: [ManifestEntry], removing: [Int] = []) -> (data: Data, copies: [ObjectCopy]) {
        // Where each upsert goes: found through the hash index (it replaces that line), or, for a
        // new id, by binary search (it goes before that line). No unchanged id is compared.
        let incoming = upserts.sorted { $0.id < $1.id }  // stable: equal ids keep their order
        var targets: [(entry: ManifestEntry, position: Int, replaces: Bool)] = []
        targets.reserveCapacity(incoming.count)
        for (index, entry) in incoming.enumerated() where index + 1 == incoming.count || incoming[index + 1].id != entry.id {
            if let position = position(of: entry.id) {
                targets.append((entry, position, true))
            } else {
                targets.append((entry, insertionPoint(of: entry.id), false))
            }
        }
        let removed = removing.sorted()
        var nextRemoved = 0
        // Built as `Data` (the blob writer takes it), so 8.7 MB are not copied once more.
        var out = Data(capacity: bytes.count + incoming.count * 128)
        out.append(contentsOf: Array(Manifest.header.utf8) + [10])
        var encoded: [UInt8] = []  // one upserted line
        var copies: [ObjectCopy] = []
        bytes.withUnsafeBufferPointer { buffer in
            func append(_ range: Range<Int>) {
                copies.append(ObjectCopy(target: out.count, source: range.lowerBound, count: range.count))
                out.append(UnsafeBufferPointer(rebasing: buffer[range]))
            }
            // Copies the lines in `positions` but removed ones, as runs of adjacent lines.
            func copy(_ positions: Range<Int>) {
                var run: Range<Int>?
                func flush() {
                    if let pending = run { append(pending) }
                    run = nil
                }
                for position in positions {
                    while nextRemoved < removed.count, removed[nextRemoved] < position { nextRemoved += 1 }
                    if nextRemoved < removed.count, removed[nextRemoved] == position {
                        flush()
                        continue
                    }
                    let line = lines[position]
                    let end = Int(line.end)
                    guard end < buffer.count else {  // the last line, without a newline
                        flush()
                        append(line.range)
                        out.append(10)
                        continue
                    }
                    if let pending = run, pending.upperBound == Int(line.start) {
                        run = pending.lowerBound..<end + 1
                    } else {
                        flush()
                        run = Int(line.start)..<end + 1  // with its newline
                    }
                }
                flush()
            }
            var next = 0
            for target in targets {
                copy(next..<target.position)
                encoded.removeAll(keepingCapacity: true)
                Manifest.appendLine(target.entry, to: &encoded)
                out.append(contentsOf: encoded)
                next = target.replaces ? target.position + 1 : target.position
            }
            copy(next..<lines.count)
        }
        return (out, copies)
    }

    /// The position of the first entry whose id sorts after `id`.
    private func insertionPoint(of id: ItemID) -> Int {
        id.bytes.withUnsafeBufferPointer { wanted in
            bytes.withUnsafeBufferPointer { buffer in
                var low = 0, high = lines.count
                while low < high {
                    let middle = (low + high) / 2
                    let line = lines[middle]
                    if ManifestTable.withID(buffer, line.id, line.escaped, { ManifestTable.compare($0, wanted) }) < 0 {
                        low = middle + 1
                    } else {
                        high = middle
                    }
                }
                return low
            }
        }
    }

    // MARK: - Bytes

    /// The offset of the first `byte` in `buffer[from..<to]`.
    private static func find(_ byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int? {
        guard from < to, let base = buffer.baseAddress,
              let found = memchr(base + from, Int32(byte), to - from) else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// Checks one entry line as ``Manifest/parseLine(_:number:)`` does, returning where its id
    /// field ends, where its validator field is, and whether it holds an escape. Lines with an
    /// escape are checked by decoding them.
    private static func check(_ buffer: UnsafeBufferPointer<UInt8>, _ line: Range<Int>,
                              number: Int) throws(Manifest.ParseError) -> (idEnd: Int, etag: Range<Int>, escaped: Bool) {
        let escaped = find(37, in: buffer, from: line.lowerBound, to: line.upperBound) != nil
        if escaped {
            _ = try Manifest.parseLine(ArraySlice(buffer[line]), number: number)
        }
        var tabs = (0, 0, 0), found = 0
        var from = line.lowerBound
        while let tab = find(9, in: buffer, from: from, to: line.upperBound) {
            found += 1
            switch found {
            case 1: tabs.0 = tab
            case 2: tabs.1 = tab
            case 3: tabs.2 = tab
            default: break
            }
            from = tab + 1
        }
        guard found == 3 else {
            throw Manifest.ParseError(line: number, reason: "expected 4 tab-separated fields, found \(found + 1)")
        }
        guard tabs.0 > line.lowerBound, tabs.2 + 1 < line.upperBound else {
            throw Manifest.ParseError(line: number, reason: "empty id or path")
        }
        return (tabs.0, tabs.1 + 1..<tabs.2, escaped)
    }

    /// Calls `body` with the id bytes of an id field (unescaped when its line holds an escape
    /// and the field has one).
    private static func withID<R>(_ buffer: UnsafeBufferPointer<UInt8>, _ field: Range<Int>, _ lineEscaped: Bool,
                                  _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let raw = UnsafeBufferPointer(rebasing: buffer[field])
        guard lineEscaped, find(37, in: buffer, from: field.lowerBound, to: field.upperBound) != nil,
              let unescaped = Manifest.unescape(ArraySlice(raw)) else { return body(raw) }
        return unescaped.withUnsafeBufferPointer(body)
    }

    /// Byte order of two id fields of buffers (unescaped), as ``ItemID`` orders ids.
    private static func compare(_ a: UnsafeBufferPointer<UInt8>, _ left: Range<Int>, _ leftEscaped: Bool,
                                _ b: UnsafeBufferPointer<UInt8>, _ right: Range<Int>, _ rightEscaped: Bool) -> Int {
        withID(a, left, leftEscaped) { x in withID(b, right, rightEscaped) { y in compare(x, y) } }
    }

    private static let seed = 0xcbf2_9ce4_8422_2325 ^ UInt64.random(in: 0...UInt64.max)

    private static func compare(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(x.count, y.count)
        let order = common == 0 ? 0 : Int(memcmp(x.baseAddress!, y.baseAddress!, common))
        return order != 0 ? order : x.count - y.count
    }

    /// FNV-1a over the id's bytes, from a state seeded once per process: ids come from upstream,
    /// and a server choosing ids that all land in one slot must not make lookups quadratic. The
    /// low bits pick the slot; the high half is kept in it.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = seed
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash ^ (hash >> 29)
    }

    private static let highHalf: UInt64 = 0xffff_ffff_0000_0000
}

/// Where one entry line of a manifest's bytes has its fields.
private struct Line {
    /// The line's first byte, where its id field starts.
    let start: Int32
    /// The first tab: the end of the id field.
    let idEnd: Int32
    /// The line's newline (the end of the file for a last line without one).
    let end: Int32
    /// The validator field.
    let etagStart: Int32
    let etagEnd: Int32
    /// True when the line holds an escape (`%`); found once when loading, so lookups scan no
    /// bytes for it.
    let escaped: Bool

    var id: Range<Int> { Int(start)..<Int(idEnd) }
    var range: Range<Int> { Int(start)..<Int(end) }
}
