import Foundation

/// `body(0)`, ..., `body(count - 1)` run on all cores (`DispatchQueue.concurrentPerform`), the
/// results in index order. `body` may capture what is not `Sendable` (libgit2 handles, one per
/// index): each index is run once, and the results are read only after every run ended.
func concurrentMap<T>(_ count: Int, _ body: (Int) -> T) -> [T] {
    let results = UnsafeMutableBufferPointer<T?>.allocate(capacity: count)
    results.initialize(repeating: nil)
    defer { results.deinitialize(); results.deallocate() }
    nonisolated(unsafe) let output = results
    nonisolated(unsafe) let body = body
    DispatchQueue.concurrentPerform(iterations: count) { index in output[index] = body(index) }
    return results.map { $0! }
}

/// `body` applied to `0..<count` in contiguous ranges, on all cores (`chunksPerCore` ranges per
/// core, so uneven ones even out) once `count` reaches `parallelFrom`, else in one range; the
/// results joined in order. With more ranges than elements the last ones are empty.
func concurrentChunks<T>(_ count: Int, parallelFrom minimum: Int, chunksPerCore: Int = 4,
                         _ body: (Range<Int>) -> [T]) -> [T] {
    let chunks = count < minimum ? 1 : ProcessInfo.processInfo.activeProcessorCount * chunksPerCore
    let size = max(1, (count + chunks - 1) / chunks)
    return concurrentMap(chunks) { chunk in body(min(count, chunk * size)..<min(count, (chunk + 1) * size)) }.flatMap { $0 }
}
