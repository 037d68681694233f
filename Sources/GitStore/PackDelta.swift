/// A run of a new object's bytes that are the bytes of another object (its base) at `source`.
public struct ObjectCopy: Equatable, Sendable {
    /// Where the run starts in the new object.
    public var target: Int
    /// Where it starts in the base.
    public var source: Int
    /// Its length.
    public var count: Int

    public init(target: Int, source: Int, count: Int) {
        self.target = target
        self.source = source
        self.count = count
    }
}

/// git's delta format (a pack's `OBJ_OFS_DELTA` and `OBJ_REF_DELTA` entries, `patch-delta.c`):
/// the base's size and the result's, each a little-endian base-128 number, then instructions. An
/// instruction byte with the top bit set copies a run of the base, its low seven bits telling which
/// offset (four) and size (three) bytes follow, a size of 0 meaning 0x10000; a byte of 1-127
/// inserts that many bytes that follow it; 0 is reserved.
enum PackDelta {
    /// The longest run one copy instruction takes here, as git's `diff-delta.c` writes them.
    static let maximumCopy = 0x10000
    /// Shorter runs are inserted: a copy instruction takes up to eight bytes.
    static let minimumCopy = 16

    /// Why a delta cannot be read.
    struct Malformed: Error {}

    /// The runs of `delta`'s result that it copies from its base, in order, with the base's and
    /// the result's sizes; throws for a delta that is not well formed or reaches outside either.
    static func copies(in delta: UnsafeRawBufferPointer) throws(Malformed) -> (baseSize: Int, resultSize: Int, copies: [ObjectCopy]) {
        var at = 0
        func byte() throws(Malformed) -> Int {
            guard at < delta.count else { throw Malformed() }
            defer { at += 1 }
            return Int(delta[at])
        }
        func size() throws(Malformed) -> Int {
            var value = 0, shift = 0
            while true {
                let next = try byte()
                guard shift < 56 else { throw Malformed() }
                value |= (next & 0x7f) << shift
                shift += 7
                if next & 0x80 == 0 { return value }
            }
        }
        let baseSize = try size()
        let resultSize = try size()
        var copies: [ObjectCopy] = []
        var target = 0
        while at < delta.count {
            let instruction = try byte()
            if instruction & 0x80 != 0 {
                var offset = 0, length = 0
                for index in 0..<4 where instruction & (1 << index) != 0 { offset |= try byte() << (8 * index) }
                for index in 0..<3 where instruction & (0x10 << index) != 0 { length |= try byte() << (8 * index) }
                if length == 0 { length = 0x10000 }
                guard offset + length <= baseSize, target + length <= resultSize else { throw Malformed() }
                if let last = copies.last, last.target + last.count == target, last.source + last.count == offset {
                    copies[copies.count - 1].count += length
                } else {
                    copies.append(ObjectCopy(target: target, source: offset, count: length))
                }
                target += length
            } else {
                guard instruction != 0, target + instruction <= resultSize, at + instruction <= delta.count else {
                    throw Malformed()
                }
                at += instruction
                target += instruction
            }
        }
        guard target == resultSize else { throw Malformed() }
        return (baseSize, resultSize, copies)
    }

    /// The runs of an object made by `edit` from one that was itself made from another (its
    /// base) by copying `baseCopies`: runs of that other object. What the edit copies from bytes that
    /// were new in its base is not among them.
    static func compose(_ edit: [ObjectCopy], over baseCopies: [ObjectCopy]) -> [ObjectCopy] {
        var composed: [ObjectCopy] = []
        for copy in edit {
            // The first of `baseCopies` that ends after the copy's start (both are in order, but
            // the edit may copy its base's runs in any order).
            var low = 0, high = baseCopies.count
            while low < high {
                let middle = (low + high) / 2
                if baseCopies[middle].target + baseCopies[middle].count <= copy.source { low = middle + 1 } else { high = middle }
            }
            var index = low
            let end = copy.source + copy.count
            while index < baseCopies.count, baseCopies[index].target < end {
                let run = baseCopies[index]
                let start = max(run.target, copy.source)
                let stop = min(run.target + run.count, end)
                let piece = ObjectCopy(target: copy.target + (start - copy.source), source: run.source + (start - run.target),
                                     count: stop - start)
                if let last = composed.last, last.target + last.count == piece.target, last.source + last.count == piece.source {
                    composed[composed.count - 1].count += piece.count
                } else {
                    composed.append(piece)
                }
                index += 1
            }
        }
        return composed
    }

    /// The delta making the object `bytes` (`resultSize` bytes) from a base of `baseSize` bytes by
    /// copying `copies` (in order of `target`, within both objects) and inserting the rest; runs
    /// shorter than ``minimumCopy`` are inserted instead.
    static func encode(baseSize: Int, resultSize: Int, copies: [ObjectCopy],
                       bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32 + copies.count * 16 + max(0, resultSize - copies.reduce(0) { $0 + $1.count }) * 130 / 127)
        func appendSize(_ value: Int) {
            var value = value
            while value >= 0x80 {
                out.append(UInt8(value & 0x7f) | 0x80)
                value >>= 7
            }
            out.append(UInt8(value))
        }
        func insert(_ range: Range<Int>) {
            var start = range.lowerBound
            while start < range.upperBound {
                let length = min(127, range.upperBound - start)
                out.append(UInt8(length))
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<start + length]))
                start += length
            }
        }
        appendSize(baseSize)
        appendSize(resultSize)
        var next = 0
        for copy in copies where copy.count >= minimumCopy {
            insert(next..<copy.target)
            var done = 0
            while done < copy.count {
                let offset = copy.source + done
                let length = min(maximumCopy, copy.count - done)
                let at = out.count
                var instruction: UInt8 = 0x80
                out.append(0)
                for index in 0..<4 where (offset >> (8 * index)) & 0xff != 0 {
                    instruction |= 1 << index
                    out.append(UInt8((offset >> (8 * index)) & 0xff))
                }
                if length != 0x10000 {
                    for index in 0..<3 where (length >> (8 * index)) & 0xff != 0 {
                        instruction |= 0x10 << index
                        out.append(UInt8((length >> (8 * index)) & 0xff))
                    }
                }
                out[at] = instruction
                done += length
            }
            next = copy.target + copy.count
        }
        insert(next..<resultSize)
        return out
    }
}
