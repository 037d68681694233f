import Foundation
import Testing
import TidemarkFixtures

/// An upstream whose TLS certificate a private authority issued (an intranet's REST API, a
/// company's WordPress): the fixture server speaks HTTPS with a certificate made here by
/// `openssl`, which no system store trusts.
@Suite("End to end: an HTTPS upstream of a private certificate authority", .serialized)
struct PrivateAuthorityTests {
    /// A test authority and a certificate it issued for 127.0.0.1, as PEM files in `folder`:
    /// `ca.pem`, `server.pem`, `server.key`; and `other-ca.pem`, an authority that issued nothing.
    static func makeCertificates(in folder: String) async throws {
        let script = """
            set -e
            key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
            key ca.key && key other-ca.key && key server.key
            openssl req -x509 -key ca.key -out ca.pem -days 2 -subj /CN=tidemark-test-authority
            openssl req -x509 -key other-ca.key -out other-ca.pem -days 2 -subj /CN=tidemark-other-authority
            openssl req -new -key server.key -out server.csr -subj /CN=127.0.0.1
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.cnf
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile san.cnf
            """
        let made = try await CLI.run("/bin/sh", ["-c", script], in: folder)
        try #require(made.status == 0, "openssl: \(made.stderr)")
    }

    /// No certificates named by the environment: the suite's own `SSL_CERT_FILE` or `SSL_CERT_DIR`
    /// (an empty value is none).
    static let systemTrust = ["SSL_CERT_FILE": "", "SSL_CERT_DIR": "", "TIDEMARK_TEST_TOKEN": "pa-t0k"]

    @Test func theAuthorityNamedBySslCAInfoIsTrustedAndNoOtherIs() async throws {
        try await withScratch { root in
            try await Self.makeCertificates(in: root)
            let server = try await FixtureServer.start(items: 12, seed: 5, token: "pa-t0k",
                                                       tls: (root + "/server.pem", root + "/server.key"))
            defer { Task { await server.stop() } }
            #expect(server.baseURL.hasPrefix("https://"))
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/1"
            let clone = ["clone", spec, "--token-env", "TIDEMARK_TEST_TOKEN"]

            // The system's store does not know the authority: one attempt, and advice.
            let untrusted = try await CLI.tidemark(clone + ["m"], in: root, environment: Self.systemTrust)
            #expect(untrusted.status == 128)
            #expect(untrusted.stderr.contains("the server's TLS certificate could not be verified")
                    && untrusted.stderr.contains("git config tidemark.sslCAInfo <file.pem>"), "\(untrusted.stderr)")
            #expect(server.requests.isEmpty && !FileManager.default.fileExists(atPath: root + "/m"))

            // Named relative to where `-C` says the clone runs.
            try FileManager.default.createDirectory(atPath: root + "/team", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: root + "/ca.pem", toPath: root + "/team/ca.pem")
            let dashC = try await CLI.tidemark(["-C", "team"] + clone + ["--option", "sslCAInfo=ca.pem", "t"], in: root,
                                               environment: Self.systemTrust)
            #expect(dashC.status == 0, "\(dashC.stderr)")
            #expect(try await CLI.git(["config", "tidemark.sslCAInfo"], in: root + "/team/t") == root + "/team/ca.pem\n")

            // Named relative to where the clone starts: stored as a full path.
            let cloned = try await CLI.tidemark(clone + ["--option", "sslCAInfo=ca.pem", "m"], in: root, environment: Self.systemTrust)
            #expect(cloned.status == 0 && cloned.stdout.hasPrefix("Cloned 12 items (12 downloaded)"), "\(cloned.stderr)")
            let mirror = root + "/m"
            #expect(try await CLI.git(["config", "tidemark.sslCAInfo"], in: mirror) == root + "/ca.pem\n")
            try await CLI.expectClean(mirror)

            let changed = server.ids(.docusign).sorted()[4]
            #expect(server.modify(.docusign, id: changed))
            let sync = try await CLI.tidemark(["sync"], in: mirror + "/templates", environment: Self.systemTrust)
            #expect(sync.status == 0 && sync.stdout.contains("1 changed, 0 new, 0 deleted"), "\(sync.stdout)\(sync.stderr)")

            // In the config, a relative path is the mirror's (from a subfolder too, and with -C).
            try FileManager.default.copyItem(atPath: root + "/ca.pem", toPath: mirror + "/.git/corp-ca.pem")
            try await CLI.git(["config", "tidemark.sslCAInfo", ".git/corp-ca.pem"], in: mirror)
            let relative = try await CLI.tidemark(["-C", "m/templates", "fetch"], in: root, environment: Self.systemTrust)
            #expect(relative.status == 0, "\(relative.stderr)")

            // `~` is the home folder, as in git's path settings.
            try await CLI.git(["config", "tidemark.sslCAInfo", "~/ca.pem"], in: mirror)
            var home = Self.systemTrust
            home["HOME"] = root
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror, environment: home).status == 0)

            // A folder without the names `openssl rehash` gives: said so.
            try FileManager.default.createDirectory(atPath: root + "/unhashed", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: root + "/ca.pem", toPath: root + "/unhashed/ca.pem")
            try await CLI.git(["config", "tidemark.sslCAInfo", root + "/unhashed"], in: mirror)
            let unhashed = try await CLI.tidemark(["fetch"], in: mirror, environment: Self.systemTrust)
            #expect(unhashed.status == 128 && unhashed.stderr.contains("holds no certificate named by its hash: run 'openssl rehash"),
                    "\(unhashed.stderr)")

            // Another authority: refused, naming the file and where it was set.
            try await CLI.git(["config", "tidemark.sslCAInfo", root + "/other-ca.pem"], in: mirror)
            let other = try await CLI.tidemark(["fetch"], in: mirror, environment: Self.systemTrust)
            #expect(other.status == 128 && other.stderr.contains(
                "could not be verified against the certificates in \(root)/other-ca.pem (tidemark.sslCAInfo)"), "\(other.stderr)")

            // A file that is not there, or holds no certificate: said before any request.
            server.resetCounts()
            for (value, problem) in [("missing.pem", "'\(mirror)/missing.pem', which does not exist"),
                                     (root + "/san.cnf", "'\(root)/san.cnf', which is not a file of PEM certificates")] {
                try await CLI.git(["config", "tidemark.sslCAInfo", value], in: mirror)
                let bad = try await CLI.tidemark(["fetch"], in: mirror, environment: Self.systemTrust)
                #expect(bad.status == 128 && bad.stderr.contains("fatal: config tidemark.sslCAInfo names \(problem)"), "\(bad.stderr)")
                let config = try await CLI.tidemark(["config"], in: mirror, environment: Self.systemTrust)
                #expect(config.stdout.contains("tidemark.sslCAInfo = \(value) (not usable: "), "\(config.stdout)")
            }
            #expect(server.requests.isEmpty)
            try await CLI.expectClean(mirror)
        }
    }

    @Test func opensslsVariablesNameTheCertificatesWhenTheConfigDoesNot() async throws {
        try await withScratch { root in
            try await Self.makeCertificates(in: root)
            let server = try await FixtureServer.start(items: 3, seed: 6, token: "pa-t0k",
                                                       tls: (root + "/server.pem", root + "/server.key"))
            defer { Task { await server.stop() } }
            let clone = ["clone", "docusign:\(server.baseURL)/restapi/v2.1/accounts/1", "--token-env", "TIDEMARK_TEST_TOKEN"]
            var environment = Self.systemTrust
            environment["SSL_CERT_FILE"] = root + "/ca.pem"
            let byFile = try await CLI.tidemark(clone + ["by-file"], in: root, environment: environment)
            #expect(byFile.status == 0, "\(byFile.stderr)")
            // Nothing of the environment is stored: a later run without it does not trust the server.
            #expect(try await CLI.git(["config", "--get-regexp", "tidemark"], in: root + "/by-file").contains("sslCAInfo") == false)
            let later = try await CLI.tidemark(["fetch"], in: root + "/by-file", environment: Self.systemTrust)
            #expect(later.status == 128 && later.stderr.contains("could not be verified"), "\(later.stderr)")
            // The wrong file in the variable: named, with the setting that overrides it.
            environment["SSL_CERT_FILE"] = root + "/other-ca.pem"
            let wrong = try await CLI.tidemark(["fetch"], in: root + "/by-file", environment: environment)
            #expect(wrong.status == 128 && wrong.stderr.contains("against the certificates in \(root)/other-ca.pem (SSL_CERT_FILE)")
                    && wrong.stderr.contains("git config tidemark.sslCAInfo"), "\(wrong.stderr)")
            // tidemark.sslCAInfo wins over the variable.
            try await CLI.git(["config", "tidemark.sslCAInfo", root + "/ca.pem"], in: root + "/by-file")
            #expect(try await CLI.tidemark(["fetch"], in: root + "/by-file", environment: environment).status == 0)

            // A folder of certificates named by hash (`openssl rehash`), as SSL_CERT_DIR names.
            let folder = root + "/certs"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: root + "/ca.pem", toPath: folder + "/ca.pem")
            let rehash = try await CLI.run("/usr/bin/openssl", ["rehash", folder], in: root)
            try #require(rehash.status == 0, "\(rehash.stderr)")
            environment["SSL_CERT_FILE"] = ""
            environment["SSL_CERT_DIR"] = folder
            let byFolder = try await CLI.tidemark(clone + ["by-folder"], in: root, environment: environment)
            #expect(byFolder.status == 0, "\(byFolder.stderr)")
            try await CLI.expectClean(root + "/by-folder")
            // Both, as OpenSSL reads them: the file's authorities and the folder's are trusted (a
            // missing folder in the list is passed over).
            environment["SSL_CERT_FILE"] = root + "/other-ca.pem"
            environment["SSL_CERT_DIR"] = root + "/missing:" + folder
            let byBoth = try await CLI.tidemark(clone + ["by-both"], in: root, environment: environment)
            #expect(byBoth.status == 0, "\(byBoth.stderr)")
        }
    }
}
