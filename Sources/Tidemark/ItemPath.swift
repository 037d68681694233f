import Foundation
import GitStore
import Upstreams

/// Maps item ids to file names inside their collection folder, and back.
///
/// The encoding works on the id's bytes and yields only `a-z 0-9 _ - . % ^ +`:
/// - `a-z`, `0-9` and `_` stand for themselves; so do `-` and `.` except first (and `.` last);
/// - an upper-case letter becomes `^` and its lower-case form (so no two names differ only in case);
/// - every other byte becomes `%` and two lower-case hex digits (`/` → `%2f`, NUL → `%00`);
/// - a Windows device name (`con`, `aux`, `com1`, ...) gets its first byte escaped;
/// - an encoding longer than 200 bytes is cut to 150 and suffixed with `+` and the git blob id of the id,
///   keeping file names under 255 bytes. Only these names cannot be decoded alone: the manifest
///   records each item's path, and ``decode(_:)`` returns nil for them.
///
/// Then `.json` is appended. The result never starts with `.` or `-`, never is `.git` in any
/// disguise (`.GIT`, `git~1`, `.g\u{200c}it` all escape), holds no `/`, `\`, `:` or control
/// characters, and decoding it gives the id's exact bytes back (NFC and NFD stay distinct).
package enum ItemPath {
    /// Why an id cannot be stored.
    package enum Error: Swift.Error, Equatable, CustomStringConvertible {
        case emptyID
        package var description: String { "an item id is empty" }
    }

    static let maximumEncodedLength = 200
    static let truncatedLength = 150
    static let reservedNames: Set<String> = {
        var names: Set<String> = ["con", "prn", "aux", "nul", "conin$", "conout$"]
        for n in 0...9 { names.insert("com\(n)"); names.insert("lpt\(n)") }
        return names
    }()

    /// The file name for `id` (with `.json`), inside its collection (and fan-out) folder.
    package static func fileName(for id: ItemID) throws(Error) -> String {
        try encode(id) + ".json"
    }

    /// Hex digits in the name of a fan-out folder made now: 4,096 folders, about 24 items each at
    /// 100k items, so a sync of 1,000 scattered changes rewrites 1.6 MB of trees (7 MB with 256
    /// folders of 390) and its checkout reads folders of 24 entries. Mirrors fanned out before
    /// keep their two-digit folders (``fanoutDigits(ofStoredPath:)``).
    package static let fanoutDigits = 3

    /// The path of `id` relative to its collection folder: the file name, under a fan-out folder
    /// named by the first `fanoutDigits` hex digits of the id's git blob id (none when 0).
    package static func relativePath(for id: ItemID, fanoutDigits: Int) throws(Error) -> String {
        let name = try fileName(for: id)
        guard fanoutDigits > 0 else { return name }
        return String(ObjectID.hashBlob(Data(id.bytes)).hex.prefix(fanoutDigits)) + "/" + name
    }

    /// The fan-out digits of a stored item path: the length of its folder's name (2 or 3 for a
    /// folder made by tidemark), 0 for a path in the collection folder itself.
    package static func fanoutDigits(ofStoredPath path: String) -> Int {
        path.firstIndex(of: "/").map { path.distance(from: path.startIndex, to: $0) } ?? 0
    }

    /// The encoded stem (without `.json`).
    package static func encode(_ id: ItemID) throws(Error) -> String {
        let bytes = id.bytes
        guard !bytes.isEmpty else { throw .emptyID }
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        func escape(_ byte: UInt8) { out += [37, hex[Int(byte >> 4)], hex[Int(byte & 15)]] }
        for (position, byte) in bytes.enumerated() {
            switch byte {
            case 97...122, 48...57, 95: out.append(byte)
            case 65...90: out += [94, byte + 32]
            case 45: position == 0 ? escape(byte) : out.append(byte)
            case 46: position == 0 || position == bytes.count - 1 ? escape(byte) : out.append(byte)
            default: escape(byte)
            }
        }
        // Windows device names, also with an extension ("con.txt").
        let stem = out.prefix(while: { $0 != 46 })
        if reservedNames.contains(String(decoding: stem, as: UTF8.self)) {
            let first = out.removeFirst()
            out.insert(contentsOf: [37, hex[Int(first >> 4)], hex[Int(first & 15)]], at: 0)
        }
        if out.count > maximumEncodedLength {
            var cut = truncatedLength
            // Do not split an escape sequence.
            if out[cut - 1] == 37 || out[cut - 1] == 94 { cut -= 1 } else if cut >= 2, out[cut - 2] == 37 { cut -= 2 }
            out = Array(out[..<cut]) + [43] + Array(ObjectID.hashBlob(Data(bytes)).hex.utf8)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The id a stem (file name without `.json`) encodes; nil when it is not a canonical
    /// encoding or was shortened with a hash (look those up in the manifest).
    package static func decode(_ stem: String) -> ItemID? {
        let input = Array(stem.utf8)
        guard !input.isEmpty, !input.contains(43) else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        func hexValue(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            default: nil
            }
        }
        while index < input.count {
            let c = input[index]
            switch c {
            case 37:
                guard index + 2 < input.count,
                      let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            case 94:
                guard index + 1 < input.count, (97...122).contains(input[index + 1]) else { return nil }
                bytes.append(input[index + 1] - 32)
                index += 2
            default:
                bytes.append(c)
                index += 1
            }
        }
        let id = ItemID(bytes: bytes)
        // Only canonical encodings decode, so that decoding is the exact inverse of encoding.
        guard (try? encode(id)) == stem else { return nil }
        return id
    }
}

/// Validates collection names: they become folder names and parts of ref names.
package enum CollectionName {
    /// True for `^[a-z0-9][a-z0-9_-]{0,63}$`.
    package static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), let first = bytes.first,
              (97...122).contains(first) || (48...57).contains(first) else { return false }
        return bytes.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 95 || $0 == 45 }
    }
}
