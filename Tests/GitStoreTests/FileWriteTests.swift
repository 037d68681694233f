import Foundation
@testable import GitStore
import Testing
import TestSupport

@Suite("GitStore: whole writes of many buffers")
struct FileWriteTests {
    /// Pieces of every size (empty ones too), more than one `writev` takes at a time.
    static func pieces(_ count: Int) -> [[UInt8]] {
        (0..<count).map { index in
            (0..<(index % 50 == 0 ? 70_000 : index * 37 % 300)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        }
    }

    /// Calls `body` with the pieces as buffers.
    static func withBuffers<R>(_ pieces: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        func nest(_ index: Int, _ buffers: [UnsafeRawBufferPointer]) -> R {
            guard index < pieces.count else { return body(buffers) }
            return pieces[index].withUnsafeBytes { nest(index + 1, buffers + [$0]) }
        }
        return nest(0, [])
    }

    @Test func buffersAreWrittenWholeAndInOrderToAFile() async throws {
        try await withScratch { path in
            let pieces = Self.pieces(2_500)
            let file = path + "/out"
            let descriptor = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(descriptor >= 0)
            #expect(Self.withBuffers(pieces) { writeAll(descriptor, $0) })
            close(descriptor)
            #expect(FileManager.default.contents(atPath: file) == Data(pieces.joined()))
        }
    }

    /// More than a pipe holds, so the writer waits for the reader on the way.
    @Test func buffersReachAReaderWholeAndInOrder() throws {
        let pieces = Self.pieces(1_500)
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let reader = ends[0]
        nonisolated(unsafe) var received = Data()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while case let count = read(reader, &buffer, buffer.count), count > 0 { received.append(contentsOf: buffer[..<count]) }
            done.signal()
        }
        #expect(Self.withBuffers(pieces) { writeAll(ends[1], $0) })
        close(ends[1])
        done.wait()
        close(reader)
        #expect(received == Data(pieces.joined()))
    }

    /// A short write goes on from the byte after the last one written, in whichever buffer.
    @Test func aShortWriteGoesOnWhereItStopped() {
        let storage = UnsafeMutableRawPointer.allocate(byteCount: 14, alignment: 1)
        defer { storage.deallocate() }
        func vectors() -> [iovec] {
            [iovec(iov_base: storage, iov_len: 5), iovec(iov_base: storage + 5, iov_len: 7), iovec(iov_base: storage + 12, iov_len: 2)]
        }
        for (count, expectedFirst, expectedBase, expectedLength) in [(1, 0, 1, 4), (5, 1, 5, 7), (6, 1, 6, 6), (12, 2, 12, 2), (13, 2, 13, 1), (14, 3, -1, 0)] {
            var all = vectors()
            var first = 0
            skipWritten(count, in: &all, from: &first)
            #expect(first == expectedFirst, "\(count)")
            if first < all.count {
                #expect(all[first].iov_base == storage + expectedBase && all[first].iov_len == expectedLength, "\(count)")
            }
            #expect(all.dropFirst(first + 1).map(\.iov_len) == vectors().dropFirst(first + 1).map(\.iov_len), "\(count)")
        }
        // Written in two short calls.
        var all = vectors()
        var first = 0
        skipWritten(3, in: &all, from: &first)
        skipWritten(6, in: &all, from: &first)
        #expect(first == 1 && all[1].iov_base == storage + 9 && all[1].iov_len == 3)
    }
}
