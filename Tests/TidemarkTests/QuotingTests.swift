import Foundation
import Testing
import TestSupport
@testable import Tidemark

@Suite("Quoting: names C-quoted as git quotes paths")
struct QuotingTests {
    /// Every byte a file name can hold, between two letters: quoted as `git ls-files` quotes
    /// it (`core.quotePath` on), both as a `String` and appended to a buffer (`tidemark ls`).
    @Test func everyByteIsQuotedAsGitQuotesIt() async throws {
        try await withScratch { path in
            let root = path + "/repo"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try git(["init", "-q"], in: root)
            let names = (1...255).filter { $0 != Int(UInt8(ascii: "/")) }.map { [UInt8(ascii: "a"), UInt8($0), UInt8(ascii: "z")] }
            for name in names {
                let fd = (Array((root + "/").utf8) + name + [0]).withUnsafeBufferPointer {
                    open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644)
                }
                #expect(fd >= 0)
                close(fd)
            }
            try git(["add", "-A"], in: root)
            let listed = try git(["-c", "core.quotePath=true", "ls-files"], in: root).split(separator: "\n").map(String.init).sorted()
            let ours = names.map { Quoting.cQuoted($0) }
            #expect(ours.sorted() == listed)
            for name in names {
                var appended: [UInt8] = [UInt8(ascii: ">")]
                name.withUnsafeBufferPointer { Quoting.append(quoting: $0, to: &appended) }
                #expect(String(decoding: appended, as: UTF8.self) == ">" + Quoting.cQuoted(name), "\(name)")
            }
        }
    }
}
