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
