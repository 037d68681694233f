import Foundation
import Testing

/// What `GIT_OPT_ENABLE_FSYNC_GITDIR` buys, seen from the system calls: every object, pack and
/// ref file is fsynced before the rename that makes a ref name the new snapshot.
@Suite("End to end: a snapshot is on disk before a ref names it")
struct DurabilityTests {
    static let strace = "/usr/bin/strace"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: strace)))
    func syncFsyncsPacksObjectsAndRefsBeforeMovingThem() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            for index in 1...150 { try writeItem(upstream, "i\(index)", lastModified: "2021-01-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            // 120 changed items: enough for the blobs to go into one pack.
            for index in 1...120 { try writeItem(upstream, "i\(index)", lastModified: "2021-06-01T00:00:00Z", extra: #", "v": 2"#) }

            let trace = root + "/trace"
            let run = try await CLI.run(Self.strace, ["-f", "-qq", "-e", "trace=fsync,rename,link", "-o", trace,
                                                      CLI.tidemark, "sync"], in: root + "/m")
            #expect(run.status == 0, "\(run.stderr)")
            let lines = Self.completedCalls(try String(contentsOfFile: trace, encoding: .utf8))
            // libgit2 puts a file in place with link(2) (objects, packs) or rename(2) (refs).
            func index(_ needle: String) -> Int? {
                lines.firstIndex { ($0.contains("rename(") || $0.contains("link(")) && $0.contains(needle) && $0.hasSuffix("= 0") }
            }
            let pack = try #require(index(".pack\""), "the blobs were written as a pack")
            let upstreamRef = try #require(index("refs/tidemark/upstream.lock\", \""))
            let branch = try #require(index("refs/heads/main.lock\", \""))
            let fsyncs = lines.indices.filter { lines[$0].contains("fsync(") && lines[$0].contains("= 0") }
            // The pack is fsynced before it is renamed into place; the trees and the commit (loose
            // objects) and the ref file are fsynced before the upstream ref moves; the branch moves last.
            #expect(fsyncs.contains { $0 < pack })
            #expect(fsyncs.filter { $0 > pack && $0 < upstreamRef }.count >= 3)
            #expect(pack < upstreamRef && upstreamRef < branch)
            #expect(fsyncs.contains { $0 > upstreamRef && $0 < branch })
        }
    }

    /// strace's lines, one per system call, in the order the calls returned. When threads
    /// overlap, strace splits a call in two (`fsync(5 <unfinished ...>`, then `<... fsync
    /// resumed>) = 0` from the same pid); the halves are joined where the call returned.
    static func completedCalls(_ output: String) -> [String] {
        var started: [Substring: String] = [:]
        var calls: [String] = []
        for line in output.split(separator: "\n") {
            let pid = line.prefix { $0 != " " }
            if line.hasSuffix(" <unfinished ...>") {
                started[pid] = String(line.dropLast(" <unfinished ...>".count))
            } else if let resumed = line.range(of: " resumed>") {
                calls.append((started.removeValue(forKey: pid) ?? String(pid) + " ") + line[resumed.upperBound...])
            } else {
                calls.append(String(line))
            }
        }
        return calls
    }

    @Test func callsSplitByStraceAreJoinedWhereTheyReturned() {
        let output = """
            101 fsync(5 <unfinished ...>
            102 link("a.pack.tmp", "a.pack") = 0
            101 <... fsync resumed>) = 0
            101 rename("HEAD.lock", "HEAD") = 0
            """
        #expect(Self.completedCalls(output) == [
            #"102 link("a.pack.tmp", "a.pack") = 0"#, "101 fsync(5) = 0", #"101 rename("HEAD.lock", "HEAD") = 0"#,
        ])
    }
}
