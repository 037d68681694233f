import Foundation
import Testing
@testable import Upstreams

@Suite struct CredentialsTests {
    @Test func tokenFromEnvironment() async throws {
        let credentials = try Credentials(options: ["tokenEnv": "TM_TOKEN"], environment: ["TM_TOKEN": " abc \n"])
        #expect(try await credentials.resolve() == .bearer("abc"))
        #expect(credentials.redact("Bearer abc failed") == "Bearer *** failed")
    }

    /// A server may echo the token in a URL with some or all of its characters percent-encoded.
    @Test func aPercentEncodedTokenIsRedactedToo() async throws {
        let credentials = try Credentials(options: ["tokenEnv": "TM_TOKEN"], environment: ["TM_TOKEN": "ab-c.d/é"])
        #expect(try await credentials.resolve() == .bearer("ab-c.d/é"))
        for echoed in ["ab%2Dc.d%2F%C3%A9", "%61%62%2d%63%2e%64%2f%c3%a9", "ab-c.d%2F%C3%A9"] {
            #expect(credentials.redact("https://x/next?token=\(echoed)&n=2") == "https://x/next?token=***&n=2", "\(echoed)")
        }
        #expect(credentials.redact("a 100% plain message") == "a 100% plain message")
    }

    /// A short secret (a placeholder such as `token`, a typo) is redacted where it stands alone,
    /// not inside words and URLs, which it starred (`tidemark.***Env`, `/rest***pi/`), showing
    /// which letters it was. A long one is redacted wherever it appears.
    @Test func aShortSecretIsRedactedOnlyWhereItStandsAlone() async throws {
        for (token, text, expected) in [
            ("token", "credentials from $TOK (tokenEnv) were refused: Bearer token", "credentials from $TOK (tokenEnv) were refused: Bearer ***"),
            ("a", "http://x/restapi/v2.1/accounts/a/templates?token=a", "http://x/restapi/v2.1/accounts/***/templates?token=***"),
            ("x", "cannot resolve host 'nonexistent.invalid' with x", "cannot resolve host 'nonexistent.invalid' with ***"),
            ("ab c", "echo=ab+c&q=abc", "echo=***&q=abc"),
            ("0123456789ab", "id-0123456789abcdef", "id-***cdef"),
        ] {
            let credentials = try Credentials(options: ["tokenEnv": "T"], environment: ["T": token])
            _ = try await credentials.resolve()
            #expect(credentials.redact(text) == expected, "\(token)")
        }
    }

    /// A password with spaces (WordPress's application passwords) echoed form-encoded, each space
    /// a `+`, is redacted too (it was printed by `-v`).
    @Test func aFormEncodedPasswordIsRedacted() async throws {
        let credentials = try Credentials(options: ["basicEnv": "U:P"], environment: ["U": "admin", "P": "abcd EFGH ijkl"])
        _ = try await credentials.resolve()
        for echoed in ["abcd+EFGH+ijkl", "abcd%20EFGH+ijkl", "abcd EFGH+ijkl"] {
            #expect(credentials.redact("GET /posts?pg=2&echo=\(echoed) 200") == "GET /posts?pg=2&echo=*** 200", "\(echoed)")
        }
        #expect(credentials.redact("a+b c") == "a+b c")
    }

    /// A secret an upstream echoes into a listed field is redacted before the message shortens
    /// the field: cut first, its start was printed (57 of a token's 100 characters).
    @Test func aSecretInAShortenedFieldIsRedactedFirst() async throws {
        let token = String(repeating: "t0K3n", count: 20)
        let credentials = try Credentials(options: ["tokenEnv": "T"], environment: ["T": token])
        _ = try await credentials.resolve()
        #expect {
            _ = try listedVersion(.string("Bearer " + token), collection: "items", item: "b", field: "lastModified", redact: credentials.redact)
        } throws: { error in
            (error as? UpstreamError)?.description.hasPrefix("items/b: field 'lastModified' is not a date-time: 'Bearer ***' (it takes") == true
        }
    }

    /// A secret in text a message quotes (a `"`, a `\\`, bytes above 0x7f written as octal) is
    /// redacted in that form too.
    @Test func aQuotedSecretIsRedactedToo() async throws {
        let credentials = try Credentials(options: ["basicEnv": "U:P"], environment: ["U": "admin", "P": #"pä"ss\w"#])
        _ = try await credentials.resolve()
        let shown = CQuoting.quoted(#"bad password pä"ss\w!"#)
        #expect(shown.hasPrefix("\"") && credentials.redact(shown) == #""bad password ***!""#, "\(credentials.redact(shown))")
    }

    @Test func missingVariableIsNamed() async throws {
        let credentials = try Credentials(options: ["tokenEnv": "TM_MISSING_VAR"], environment: [:])
        let error = await upstreamError { _ = try await credentials.resolve() }
        guard case .credentials(let message)? = error else { Issue.record("wrong error \(String(describing: error))"); return }
        #expect(message.contains("TM_MISSING_VAR"))
        #expect(message.contains("tokenEnv"))
    }

    @Test func basicFromTwoVariables() async throws {
        let credentials = try Credentials(options: ["basicEnv": "WP_USER:WP_PASS"],
                                          environment: ["WP_USER": "admin", "WP_PASS": canary])
        let credential = try await credentials.resolve()
        #expect(credential == .basic(user: "admin", password: canary))
        let header = credential?.authorizationHeader ?? ""
        #expect(header == "Basic " + Data("admin:\(canary)".utf8).base64EncodedString())
        #expect(!credentials.redact("sent \(header) with \(canary)").contains(canary))
        #expect(!credentials.redact(header).contains(String(header.dropFirst(6))))
    }

    @Test func malformedBasicEnvIsRefused() {
        #expect(throws: UpstreamError.self) { try Credentials(options: ["basicEnv": "ONLYONE"], environment: [:]) }
        #expect(throws: UpstreamError.self) {
            try Credentials(options: ["tokenEnv": "A", "tokenCommand": "echo b"], environment: [:])
        }
    }

    /// A secret stored where a variable name belongs (`git config tidemark.tokenEnv <token>`) is
    /// refused without being repeated in the message.
    @Test func aSecretInPlaceOfAVariableNameIsRefusedUnechoed() {
        let token = "eyJ0eXAi.sk-live-8f3b"
        for options in [["tokenEnv": token], ["basicEnv": "admin:\(token)"], ["basicEnv": "WP_USER:pass word"],
                        ["tokenEnv": "1ABC"], ["tokenEnv": ""]] {
            do {
                _ = try Credentials(options: options, environment: [:])
                Issue.record("accepted \(options)")
            } catch {
                let message = "\(error)"
                #expect(message.contains(options.keys.first!))
                #expect(!message.contains(token) && !message.contains("pass word"))
            }
        }
        #expect((try? Credentials(options: ["basicEnv": "WP_USER:_PASS2"], environment: [:])) != nil)
    }

    /// A token or password pasted where a variable's name belongs, and which happens to be a
    /// valid name, is not repeated when no such variable is set: only names in capitals are (a
    /// short password, or a WordPress application password without its spaces, was).
    @Test func aMissingVariableThatLooksLikeATokenIsNotNamed() async throws {
        let pasted = "ghp_4Fq9xZ2mT7kLw0bN8sYc3VdR6hJ1uE5aP0oI"
        for (options, name, shown) in [
            (["tokenEnv": pasted], pasted, false), (["tokenEnv": "DOCUSIGN_TOKEN"], "DOCUSIGN_TOKEN", true),
            (["tokenEnv": "Hunter2Hunter2"], "Hunter2Hunter2", false),
            (["basicEnv": "USER:abcdEFGH1234ijklMNOP6789"], "abcdEFGH1234ijklMNOP6789", false),
        ] {
            let credentials = try Credentials(options: options, environment: ["USER": "editor"])
            do {
                _ = try await credentials.resolve()
                Issue.record("resolved \(name)")
            } catch {
                #expect("\(error)".contains(name) == shown && "\(error)".contains(options.keys.first!), "\(error)")
            }
        }
    }

    /// A token with a control character could not go in a header, and the HTTP client's error
    /// would print it escaped (past the redaction): refused up front, unnamed.
    @Test func aTokenWithAControlCharacterIsRefusedUnechoed() async throws {
        let credentials = try Credentials(options: ["tokenEnv": "TM_TOKEN"], environment: ["TM_TOKEN": "PART1\u{7F}PART2"])
        do {
            _ = try await credentials.resolve()
            Issue.record("accepted a token with a control character")
        } catch {
            #expect("\(error)".contains("TM_TOKEN") && !"\(error)".contains("PART1"))
        }
    }

    @Test func tokenCommandPrintsToken() async throws {
        let credentials = try Credentials(options: ["tokenCommand": "printf 'tok-123\\n'"])
        #expect(try await credentials.resolve() == .bearer("tok-123"))
    }

    @Test func tokenCommandFailureHidesOutput() async throws {
        let credentials = try Credentials(options: ["tokenCommand": "echo \(canary); exit 3"])
        let error = await upstreamError { _ = try await credentials.resolve() }
        guard case .credentials(let message)? = error else { Issue.record("wrong error \(String(describing: error))"); return }
        #expect(message.contains("exit status 3"))
        #expect(!message.contains(canary))
        // It says how to see why, and where the command is set.
        #expect(message.contains("run it by hand") && message.contains("git config tidemark.tokenCommand"), "\(message)")
    }

    @Test func tokenCommandTimesOut() async throws {
        let credentials = try Credentials(options: ["tokenCommand": "sleep 30"], commandTimeout: 0.3)
        let error = await upstreamError { _ = try await credentials.resolve() }
        guard case .credentials(let message)? = error else { Issue.record("wrong error \(String(describing: error))"); return }
        #expect(message.contains("did not finish"))
        // Timed on the command runner itself: an async call's time here also counts the wait for
        // a free thread of the test process's task pool (2 on this machine), which the other tests
        // running in parallel hold for up to 20 s.
        let start = Date()
        #expect(throws: UpstreamError.self) { try TokenCommand.run("sleep 30", timeout: 0.3) }
        #expect(Date().timeIntervalSince(start) < 15)  // stopped after 0.3 s, not after the command's 30 s
    }

    /// A timeout stops what the command started too, and what ignores SIGTERM: a script's
    /// `sleep` (a hung vault client) was left running, one more each cron run.
    @Test func aTokenCommandThatTimesOutLeavesNoProcessBehind() throws {
        do {
            let path = NSTemporaryDirectory() + "tidemark-token-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let marker = path + "/started"
            let command = "trap '' TERM; (trap '' TERM; echo $$ > \(marker).child; exec sleep 300) & echo $! > \(marker); wait"
            #expect(throws: UpstreamError.self) { try TokenCommand.run(command, timeout: 0.5) }
            let text = try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let pid = try #require(Int32(text))
            // Gone (reaped by init), or at most a zombie for a moment.
            var alive = true
            for _ in 0..<50 {
                let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: " ").dropFirst(2).first
                alive = state != nil && state != "Z"
                if !alive { break }
                usleep(100_000)
            }
            #expect(!alive, "the command's child (pid \(pid)) still runs")
        }
    }

    @Test func tokenCommandSeesTheEnvironmentAndMustPrintOneLine() async throws {
        let home = try #require(ProcessInfo.processInfo.environment["HOME"])
        let credentials = try Credentials(options: ["tokenCommand": "printf '%s\\n' \"$HOME\""])
        #expect(try await credentials.resolve() == .bearer(home))
        let twoLines = try Credentials(options: ["tokenCommand": "printf 'a\\nb\\n'"])
        let error = await upstreamError { _ = try await twoLines.resolve() }
        #expect(error?.description.contains("more than one line") == true, "\(String(describing: error))")
    }

    @Test func tokenCommandInheritsNoOtherDescriptor() async throws {
        // A descriptor of this process left open across exec (no O_CLOEXEC), as a library user's may be.
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        let credentials = try Credentials(options: ["tokenCommand": "ls /proc/self/fd | tr '\\n' ' '"])
        // stdin, stdout, stderr, and ls's own handle on the folder.
        #expect(try await credentials.resolve() == .bearer("0 1 2 3"))
    }

    @Test func tokenCommandEndedBySignalOrLeavingItsOutputOpenFails() async throws {
        let killed = try Credentials(options: ["tokenCommand": "echo \(canary); kill -9 $$"])
        let error = await upstreamError { _ = try await killed.resolve() }
        #expect(error?.description.contains("signal 9") == true, "\(String(describing: error))")
        #expect(error?.description.contains(canary) == false)
        let background = try Credentials(options: ["tokenCommand": "(sleep 4; echo late) & echo tok"])
        let open = await upstreamError { _ = try await background.resolve() }
        #expect(open?.description.contains("left its output open") == true, "\(String(describing: open))")
    }

    @Test func tokenCommandWithNoOutputFails() async throws {
        let credentials = try Credentials(options: ["tokenCommand": "true"])
        let error = await upstreamError { _ = try await credentials.resolve() }
        #expect(error?.description.contains("printed no token") == true)
    }
}

@Suite struct CredentialsSingleFlightTests {
    @Test func tokenCommandRunsOnceForConcurrentRequests() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tm-count-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let credentials = try Credentials(options: ["tokenCommand": "echo x >> '\(file.path)'; sleep 0.2; echo tok"])
        try await withThrowingTaskGroup(of: Credential?.self) { group in
            for _ in 0..<5 { group.addTask { try await credentials.resolve() } }
            for try await credential in group { #expect(credential == .bearer("tok")) }
        }
        let runs = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").count
        #expect(runs == 1)
    }
}
