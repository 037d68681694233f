import Foundation
import Testing
import TidemarkFixtures

@Suite("End to end: the tidemark binary against the fixture WordPress API over loopback", .serialized)
struct WordPressWalkthroughTests {
    static let password = "CANARY-wp-e2e-51c9aa-SECRET"
    static let visible: Set<String> = ["publish", "future", "draft", "pending", "private"]

    /// A scheduled post that WordPress's cron publishes changes its status and not its
    /// `modified_gmt`: the next sync downloads it once (listed as scheduled before, it is not now),
    /// and the one after downloads nothing. (It stayed `"status": "future"` in the mirror for
    /// good, `sync --full` included: a WordPress admin tester's, session 33.)
    @Test func aScheduledPostPublishedByWordPressIsDownloadedOnce() async throws {
        let server = try await FixtureServer.start(items: 12, seed: 5, basic: (user: "editor", password: Self.password))
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: ["WP_USER": "editor", "WP_PASS": Self.password])
            let post = server.ids(.wordpress, type: "posts", statuses: ["publish"])[0]
            #expect(server.setStatus(postID: post, to: "future"))
            #expect(try await run.tidemark(["clone", "wordpress:\(server.baseURL)", "m", "--basic-env", "WP_USER:WP_PASS"], in: root).status == 0)
            let mirror = root + "/m", file = root + "/m/posts/\(post).json"
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\"status\": \"future\""))
            let modified = try await CLI.git(["show", "HEAD:.tidemark/posts.manifest"], in: mirror)
                .split(separator: "\n").first { $0.hasPrefix(post + "\t") }.map { $0.split(separator: "\t")[1] }
            #expect(try await run.tidemark(["sync"], in: mirror).stdout.contains("Already up to date"))

            try await admin(server, "wordpress/status?id=\(post)&status=publish")
            server.resetCounts()
            let sync = try await run.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("1 changed, 0 new, 0 deleted (1 downloaded)"), "\(sync.stdout)\(sync.stderr)")
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\"status\": \"publish\""))
            #expect(requestsByPath(server)["/wp-json/wp/v2/posts/\(post)"] == 1)
            // Its date is as it was; nothing else to download from now on.
            let after = try await CLI.git(["show", "HEAD:.tidemark/posts.manifest"], in: mirror)
                .split(separator: "\n").first { $0.hasPrefix(post + "\t") }.map { $0.split(separator: "\t")[1] }
            #expect(after == modified && after != nil)
            server.resetCounts()
            #expect(try await run.tidemark(["sync"], in: mirror).stdout.contains("Already up to date"))
            #expect(requestsByPath(server)["/wp-json/wp/v2/posts/\(post)"] == nil)
            try await CLI.expectClean(mirror)
        }
    }

    @Test func postsAndPagesWithBasicCredentials() async throws {
        let server = try await FixtureServer.start(items: 60, seed: 11, basic: (user: "editor", password: Self.password))
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let run = Transcript(environment: ["WP_USER": "editor", "WP_PASS": Self.password])
            let clone = try await run.tidemark(
                ["clone", "wordpress:\(server.baseURL)", "m", "--collection", "posts", "--collection", "pages",
                 "--basic-env", "WP_USER:WP_PASS", "--jobs", "4", "--option", "maxAttempts=2"], in: root)
            let posts = server.ids(.wordpress, type: "posts", statuses: Self.visible)
            let pages = server.ids(.wordpress, type: "pages", statuses: Self.visible)
            let total = posts.count + pages.count
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(clone.stdout.hasPrefix("Cloned \(total) items (\(total) downloaded)"), "\(clone.stdout)")
            // Drafts and private posts are mirrored too: the credentials reached the listing.
            #expect(posts.count > server.ids(.wordpress, type: "posts", statuses: ["publish"]).count)
            let mirror = root + "/m"
            try await CLI.expectClean(mirror)
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/posts").count == posts.count)
            #expect(try FileManager.default.contentsOfDirectory(atPath: mirror + "/pages").count == pages.count)
            #expect(try await CLI.git(["config", "tidemark.basicEnv"], in: mirror) == "WP_USER:WP_PASS\n")

            // Upstream changes, through the fixture's admin API over HTTP.
            let (changedPost, trashed, purged, changedPage) = (posts[2], posts[5], posts[7], pages[1])
            try await admin(server, "wordpress/modify?id=\(changedPost)")
            try await admin(server, "wordpress/modify?id=\(changedPage)")
            let newPost = createdID(try await admin(server, "wordpress/create?type=posts"))
            let newPage = createdID(try await admin(server, "wordpress/create?type=pages"))
            try await admin(server, "wordpress/trash?id=\(trashed)")
            try await admin(server, "wordpress/delete?id=\(purged)")
            server.resetCounts()

            let (fetch, report) = try await run.fetchJSON(in: mirror)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect(report?["downloaded"] as? Int == 4)
            // Per route: REST root discovery, per collection one page of live items and one of
            // trash, and exactly the four changed or new items.
            #expect(requestsByPath(server) == [
                "/wp-json/": 1, "/wp-json/wp/v2/posts": 2, "/wp-json/wp/v2/pages": 2,
                "/wp-json/wp/v2/posts/\(changedPost)": 1, "/wp-json/wp/v2/pages/\(changedPage)": 1,
                "/wp-json/wp/v2/posts/\(newPost)": 1, "/wp-json/wp/v2/pages/\(newPage)": 1,
            ])
            #expect(server.requests.filter { $0.path.hasSuffix("/posts") }.map(\.query).contains { $0.contains("status=trash") })
            #expect(try await run.porcelain(in: mirror) == [
                "M  posts/\(changedPost)", "M  pages/\(changedPage)", "A  posts/\(newPost)", "A  pages/\(newPage)",
                "D  posts/\(trashed)", "D  posts/\(purged)",
            ])
            let sync = try await run.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("2 changed, 2 new, 2 deleted"), "\(sync.stdout)\(sync.stderr)")
            #expect(try await run.porcelain(in: mirror).isEmpty)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/posts/\(trashed).json"))
            #expect(FileManager.default.fileExists(atPath: mirror + "/pages/\(newPage).json"))
            try await CLI.expectClean(mirror)

            // An unchanged upstream costs only the listing.
            server.resetCounts()
            #expect(try await run.tidemark(["fetch"], in: mirror).status == 0)
            #expect(requestsByPath(server) == ["/wp-json/": 1, "/wp-json/wp/v2/posts": 2, "/wp-json/wp/v2/pages": 2])

            // One item answers 503 past the retry budget (maxAttempts=2): the fetch names it,
            // stores the other change, keeps the watermark, and the next fetch retries it.
            let (stored, failing) = (posts[10], posts[11])  // the failing id is the larger: no shared prefix
            let before = try await watermark("posts", at: "refs/tidemark/upstream", in: mirror)
            #expect(before != nil)
            try await admin(server, "wordpress/modify?id=\(stored)")
            try await admin(server, "wordpress/modify?id=\(failing)")
            try await admin(server, "fault?status=503&prefix=/wp-json/wp/v2/posts/\(failing)")
            server.resetCounts()
            let failed = try await run.tidemark(["fetch"], in: mirror)
            #expect(failed.status == 128)
            #expect(failed.stderr.contains("1 item could not be downloaded"), "\(failed.stderr)")
            #expect(failed.stderr.contains("posts/\(failing): HTTP 503"), "\(failed.stderr)")
            #expect(!failed.stderr.contains("posts/\(stored):"))
            #expect(requestsByPath(server)["/wp-json/wp/v2/posts/\(failing)"] == 2)
            #expect(requestsByPath(server)["/wp-json/wp/v2/posts/\(stored)"] == 1)
            #expect(try await watermark("posts", at: "refs/tidemark/upstream", in: mirror) == before)
            #expect(try await run.porcelain(in: mirror) == ["M  posts/\(stored)"])

            try await admin(server, "faults/clear")
            server.resetCounts()
            let (retry, retried) = try await run.fetchJSON(in: mirror)
            #expect(retry.status == 0, "\(retry.stderr)")
            #expect(retried?["downloaded"] as? Int == 1)
            #expect(server.requests.filter { $0.path.contains("/v2/posts/") || $0.path.contains("/v2/pages/") }.map(\.path)
                == ["/wp-json/wp/v2/posts/\(failing)"])
            let after = try #require(try await watermark("posts", at: "refs/tidemark/upstream", in: mirror))
            #expect(after > (before ?? ""))
            #expect(try await run.porcelain(in: mirror) == ["M  posts/\(stored)", "M  posts/\(failing)"])
            let second = try await run.tidemark(["sync"], in: mirror)
            #expect(second.status == 0 && second.stdout.contains("2 changed, 0 new, 0 deleted"), "\(second.stdout)\(second.stderr)")
            try await CLI.expectClean(mirror)

            // Without the credentials' variables the fetch fails, naming the variable, not a secret.
            let bare = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(bare.status == 128 && bare.stderr.contains("WP_"), "\(bare.stderr)")
            // A wrong password: the REST root's 401 says which credentials were refused (discovery
            // went on to `?rest_route=` and ended on its 401, with no word about them).
            let refused = try await CLI.tidemark(["fetch"], in: mirror, environment: ["WP_USER": "editor", "WP_PASS": "wrong password"])
            #expect(refused.status == 128 && refused.stderr.contains("HTTP 401 from \(server.baseURL)/wp-json/")
                    && refused.stderr.contains("the credentials from $WP_USER and $WP_PASS (basicEnv) were refused")
                    && !refused.stderr.contains("rest_route") && !refused.stderr.contains("wrong password"), "\(refused.stderr)")

            let basic = Data("editor:\(Self.password)".utf8).base64EncodedString()
            try await expectNoSecrets([Self.password, basic], mirror: mirror, transcript: run)
        }
    }
}
