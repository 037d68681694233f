/// Whether a document is already in ``CanonicalJSON``'s form, byte for byte: then canonicalising
/// it would give it back, and it need not be parsed into values and written again. Files written
/// canonically (by tidemark, by `jq -S`, by most tools' pretty-printers with sorted keys) are
/// checked in one pass without allocating, about a tenth of the time a canonicalisation takes.
///
/// It answers true only when sure: anything it does not follow (a key with an escape in it, a
/// document nested deeper than allowed) answers false, and the full parse decides.
struct CanonicalCheck {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private var valuesLeft: Int
    private var index = 0

    /// True when `bytes` is one JSON value written canonically, then a newline, of at most
    /// `maxValues` values.
    static func isCanonical(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxValues: Int) -> Bool {
        var check = CanonicalCheck(bytes: bytes, maxDepth: maxDepth, maxValues: maxValues)
        return check.value(depth: 0, indent: 0) && check.index == bytes.count - 1 && bytes[check.index] == 10
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxValues: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.valuesLeft = maxValues
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard current == byte else { return false }
        index += 1
        return true
    }

    /// A newline, then `count` spaces.
    private mutating func line(indent count: Int) -> Bool {
        guard take(10), index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != 32 { return false }
        index += count
        return true
    }

    private mutating func value(depth: Int, indent: Int) -> Bool {
        valuesLeft -= 1
        guard depth <= maxDepth, valuesLeft >= 0, let byte = current else { return false }
        switch byte {
        case 123: return object(depth: depth, indent: indent)
        case 91: return array(depth: depth, indent: indent)
        case 34: return string(key: false) != nil
        case 116: return word("true")
        case 102: return word("false")
        case 110: return word("null")
        case 45, 48...57: return number()
        default: return false
        }
    }

    private mutating func word(_ text: StaticString) -> Bool {
        let length = text.utf8CodeUnitCount
        guard index + length <= bytes.count else { return false }
        for offset in 0..<length where bytes[index + offset] != text.utf8Start[offset] { return false }
        index += length
        return true
    }

    private mutating func object(depth: Int, indent: Int) -> Bool {
        index += 1
        if take(125) { return true }
        var previous: Range<Int>?
        repeat {
            guard line(indent: indent + 2), let key = string(key: true) else { return false }
            // Keys in strictly increasing byte order: sorted, and none repeated.
            if let previous, !bytes[previous].lexicographicallyPrecedes(bytes[key]) { return false }
            previous = key
            guard take(58), take(32), value(depth: depth + 1, indent: indent + 2) else { return false }
        } while take(44)
        return line(indent: indent) && take(125)
    }

    private mutating func array(depth: Int, indent: Int) -> Bool {
        index += 1
        if take(93) { return true }
        repeat {
            guard line(indent: indent + 2), value(depth: depth + 1, indent: indent + 2) else { return false }
        } while take(44)
        return line(indent: indent) && take(93)
    }

    /// A string as ``CanonicalJSON`` writes one; the range of its contents. A key may hold no
    /// escape (its bytes are then what the keys are sorted by).
    private mutating func string(key: Bool) -> Range<Int>? {
        guard take(34) else { return nil }
        let start = index
        var ascii = true
        while let byte = current {
            switch byte {
            case 34:
                let contents = start..<index
                index += 1
                if !ascii, String(validating: bytes[contents], as: UTF8.self) == nil { return nil }
                return contents
            case 92:
                guard !key, index + 1 < bytes.count else { return nil }
                switch bytes[index + 1] {
                case 34, 92, 98, 102, 110, 114, 116:
                    index += 2
                case 117:
                    // `\u00xx`, lowercase, for the control characters without a short escape, and DEL.
                    guard index + 6 <= bytes.count, bytes[index + 2] == 48, bytes[index + 3] == 48,
                          let high = CanonicalCheck.hexDigit(bytes[index + 4]), let low = CanonicalCheck.hexDigit(bytes[index + 5]),
                          case let scalar = high << 4 | low, scalar < 32 || scalar == 127,
                          ![8, 9, 10, 12, 13].contains(scalar) else { return nil }
                    index += 6
                default:
                    return nil
                }
            case 0..<32, 127:
                return nil
            default:
                if byte >= 0x80 { ascii = false }
                index += 1
            }
        }
        return nil
    }

    /// A lowercase hexadecimal digit's value.
    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: return byte - 48
        case 97...102: return byte - 87
        default: return nil
        }
    }

    /// A number as JSON allows it (kept as written).
    private mutating func number() -> Bool {
        _ = take(45)
        guard let first = current, (48...57).contains(first) else { return false }
        index += 1
        if first != 48 { digits() }
        if take(46) {
            guard digits() else { return false }
        }
        if current == 101 || current == 69 {
            index += 1
            if current == 43 || current == 45 { index += 1 }
            guard digits() else { return false }
        }
        return true
    }

    /// Skips digits; false when there was none.
    @discardableResult
    private mutating func digits() -> Bool {
        let start = index
        while let byte = current, (48...57).contains(byte) { index += 1 }
        return index > start
    }
}
