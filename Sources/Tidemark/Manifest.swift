import Foundation
import Upstreams

/// What a snapshot holds of one item: its upstream version and where its file is.
package struct ManifestEntry: Sendable, Equatable {
    package var id: ItemID
    /// The upstream `lastModified`, as upstream wrote it.
    package var lastModified: String
    /// The upstream validator (HTTP ETag, or the `dir` stat signature); empty when none.
    package var etag: String
    /// The item's path relative to its collection folder.
    package var path: String

    package init(id: ItemID, lastModified: String, etag: String, path: String) {
        self.id = id
        self.lastModified = lastModified
        self.etag = etag
        self.path = path
    }

    /// True when both name the same upstream version: same instant (or same text when either
    /// does not parse) and same ETag.
    package func sameVersion(as other: ManifestEntry) -> Bool {
        guard etag == other.etag else { return false }
        if lastModified == other.lastModified { return true }
        return Timestamp(other.lastModified).map(isDated) ?? false
    }

    /// True when ``lastModified`` is `listed`: the same text, or the same instant written
    /// another way.
    package func isDated(_ listed: Timestamp) -> Bool {
        lastModified == listed.raw || Timestamp(lastModified) == listed
    }
}

/// The manifest of one collection: `.tidemark/<collection>.manifest`, one line per item sorted by
/// id bytes: `id TAB lastModified TAB etag TAB path`. Fields escape `%`, TAB, LF, CR and every
/// other control byte as `%XX`; a leading `#` of an id is escaped too, as `#` starts a comment.
package struct Manifest: Sendable, Equatable {
    /// The first line of every manifest.
    package static let header = "# tidemark manifest 1: id, lastModified, etag, path (tab-separated, %XX-escaped)"

    /// Entries sorted by id.
    package private(set) var entries: [ManifestEntry]

    package init(entries: [ManifestEntry] = []) {
        self.entries = entries.sorted { $0.id < $1.id }
    }

    /// Why a manifest file cannot be read.
    package struct ParseError: Error, Equatable, CustomStringConvertible {
        package let line: Int
        package let reason: String
        package var description: String { "line \(line): \(reason)" }
    }

    /// The entry of `id`, found by binary search over the sorted entries (no 100k-entry
    /// dictionary for one lookup).
    package func entry(for id: ItemID) -> ManifestEntry? {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].id == id ? entries[low] : nil
    }

    /// Parses manifest text. Rejects unknown versions, short lines, bad escapes, and ids out of order.
    package static func parse(_ data: Data) throws(ParseError) -> Manifest {
        var entries: [ManifestEntry] = []
        let bytes = [UInt8](data)
        entries.reserveCapacity(bytes.count / 80)
        var lineNumber = 0
        var start = 0
        var previous: ItemID?
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 10 { end += 1 }
            lineNumber += 1
            let line = bytes[start..<end]
            start = end + 1
            if line.isEmpty { continue }
            if line.first == 35 {  // '#'
                if lineNumber == 1, !line.starts(with: Array("# tidemark manifest 1".utf8)) {
                    throw ParseError(line: lineNumber, reason: "unknown manifest version")
                }
                continue
            }
            let entry = try parseLine(line, number: lineNumber)
            if let previous, !(previous < entry.id) {
                throw ParseError(line: lineNumber, reason: "ids are not sorted or repeat")
            }
            previous = entry.id
            entries.append(entry)
        }
        var manifest = Manifest()
        manifest.entries = entries
        return manifest
    }

    /// One entry line: `id TAB lastModified TAB etag TAB path`.
    static func parseLine(_ line: ArraySlice<UInt8>, number lineNumber: Int) throws(ParseError) -> ManifestEntry {
        var fields: [ArraySlice<UInt8>] = []
        fields.reserveCapacity(4)
        var fieldStart = line.startIndex
        for index in line.indices where line[index] == 9 {
            fields.append(line[fieldStart..<index])
            fieldStart = index + 1
        }
        fields.append(line[fieldStart..<line.endIndex])
        guard fields.count == 4 else {
            throw ParseError(line: lineNumber, reason: "expected 4 tab-separated fields, found \(fields.count)")
        }
        guard let id = unescape(fields[0]), let modified = unescapedString(fields[1]),
              let etag = unescapedString(fields[2]), let path = unescapedString(fields[3]) else {
            throw ParseError(line: lineNumber, reason: "invalid %-escape")
        }
        guard !id.isEmpty, !path.isEmpty else { throw ParseError(line: lineNumber, reason: "empty id or path") }
        return ManifestEntry(id: ItemID(bytes: id), lastModified: modified, etag: etag, path: path)
    }

    /// The manifest as file contents.
    package func serialized() -> Data {
        var out: [UInt8] = Array(Manifest.header.utf8) + [10]
        out.reserveCapacity(entries.count * 120)
        for entry in entries { Manifest.appendLine(entry, to: &out) }
        return Data(out)
    }

    /// Appends the line of `entry`, with its newline.
    static func appendLine(_ entry: ManifestEntry, to out: inout [UInt8]) {
        escape(entry.id.bytes, leadingHash: true, into: &out)
        out.append(9)
        escape(Array(entry.lastModified.utf8), leadingHash: false, into: &out)
        out.append(9)
        escape(Array(entry.etag.utf8), leadingHash: false, into: &out)
        out.append(9)
        escape(Array(entry.path.utf8), leadingHash: false, into: &out)
        out.append(10)
    }

    static func escape(_ bytes: [UInt8], leadingHash: Bool, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        for (index, byte) in bytes.enumerated() {
            if byte < 32 || byte == 127 || byte == 37 || (leadingHash && index == 0 && byte == 35) {
                out += [37, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            } else {
                out.append(byte)
            }
        }
    }

    /// A field as text (fields other than the id are UTF-8 text).
    static func unescapedString(_ field: ArraySlice<UInt8>) -> String? {
        guard field.contains(37) else { return String(decoding: field, as: UTF8.self) }
        return unescape(field).map { String(decoding: $0, as: UTF8.self) }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 65...70: byte - 55
        case 97...102: byte - 87
        default: nil
        }
    }

    static func unescape(_ field: ArraySlice<UInt8>) -> [UInt8]? {
        guard field.contains(37) else { return Array(field) }
        var out: [UInt8] = []
        var index = field.startIndex
        while index < field.endIndex {
            if field[index] == 37 {
                // Two hex digits exactly (UInt8(_:radix:) would also take a sign, as in "%-0").
                guard index + 2 < field.endIndex, let high = hexValue(field[index + 1]), let low = hexValue(field[index + 2])
                else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(field[index])
                index += 1
            }
        }
        return out
    }
}
