import Foundation
import Upstreams

/// One item whose version differs between two manifests.
package struct ManifestChange: Sendable, Equatable {
    /// The entry before; nil when the item is new.
    package var old: ManifestEntry?
    /// The entry after; nil when the item was deleted.
    package var new: ManifestEntry?
}

extension Manifest {
    /// The items whose versions differ between two manifest files, in id order.
    ///
    /// Lines are compared as bytes first, so the unchanged majority of a 100k-item manifest is
    /// skipped without being parsed; only the lines that differ are. A line that differs only in
    /// how an equal version is written (the same instant in another notation) is no change.
    package static func changes(from old: Data, to new: Data) throws(ParseError) -> [ManifestChange] {
        let result = old.withUnsafeBytes { a in
            new.withUnsafeBytes { b in
                Result { () throws(ParseError) in try changes(a, b) }
            }
        }
        return try result.get()
    }

    private static func changes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) throws(ParseError) -> [ManifestChange] {
        var left = LineCursor(a), right = LineCursor(b)
        var changes: [ManifestChange] = []
        var x = try left.next(), y = try right.next()
        while x != nil || y != nil {
            if let l = x, let r = y, l.count == r.count,
               l.isEmpty || memcmp(a.baseAddress! + l.lowerBound, b.baseAddress! + r.lowerBound, l.count) == 0 {
                x = try left.next()
                y = try right.next()
                continue
            }
            let leftID = try x.map { (range) throws(ParseError) in try left.id(range) }
            let rightID = try y.map { (range) throws(ParseError) in try right.id(range) }
            if let leftID, rightID == nil || leftID < rightID! {
                changes.append(ManifestChange(old: try left.entry(x!), new: nil))
                x = try left.next()
            } else if let rightID, leftID == nil || rightID < leftID! {
                changes.append(ManifestChange(old: nil, new: try right.entry(y!)))
                y = try right.next()
            } else {
                let before = try left.entry(x!), after = try right.entry(y!)
                if !before.sameVersion(as: after) { changes.append(ManifestChange(old: before, new: after)) }
                x = try left.next()
                y = try right.next()
            }
        }
        return changes
    }
}

extension ChangeCounts {
    /// Counts the changes of a manifest diff.
    init(_ changes: [ManifestChange]) {
        self.init()
        for change in changes {
            switch (change.old, change.new) {
            case (nil, _?): added += 1
            case (_?, nil): deleted += 1
            default: changed += 1
            }
        }
    }
}

extension ManifestTable {
    /// What ``updating(_:removing:)`` with the same arguments changes, counted as
    /// `Manifest.changes` would count it between the two files, without comparing them.
    func changeCounts(_ upserts: [ManifestEntry], removing: [Int] = []) -> ChangeCounts {
        var latest: [ItemID: ManifestEntry] = [:]
        for entry in upserts { latest[entry.id] = entry }
        var counts = ChangeCounts(deleted: Set(removing).count)
        for entry in latest.values {
            if let position = position(of: entry.id) {
                if !self.entry(at: position).sameVersion(as: entry) { counts.changed += 1 }
            } else {
                counts.added += 1
            }
        }
        return counts
    }
}

/// Walks the entry lines of a manifest file (skipping the header, comments and blank lines).
private struct LineCursor {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    var number = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The byte range of the next entry line, nil at the end.
    mutating func next() throws(Manifest.ParseError) -> Range<Int>? {
        while position < bytes.count {
            let start = position
            var end = start
            while end < bytes.count, bytes[end] != 10 { end += 1 }
            position = end + 1
            number += 1
            if end == start { continue }
            if bytes[start] == 35 {  // '#'
                if number == 1, !Array(bytes[start..<end]).starts(with: Array("# tidemark manifest 1".utf8)) {
                    throw Manifest.ParseError(line: number, reason: "unknown manifest version")
                }
                continue
            }
            return start..<end
        }
        return nil
    }

    /// The id of the entry on `range` (its first field, unescaped).
    func id(_ range: Range<Int>) throws(Manifest.ParseError) -> ItemID {
        var end = range.lowerBound
        while end < range.upperBound, bytes[end] != 9 { end += 1 }
        guard let id = Manifest.unescape(ArraySlice(bytes[range.lowerBound..<end])) else {
            throw Manifest.ParseError(line: number, reason: "invalid %-escape")
        }
        return ItemID(bytes: id)
    }

    /// The whole entry on `range`.
    func entry(_ range: Range<Int>) throws(Manifest.ParseError) -> ManifestEntry {
        try Manifest.parseLine(ArraySlice(bytes[range]), number: number)
    }
}
