import ArgumentParser
import Foundation
import TidemarkFixtures

/// Serves the emulated upstream APIs on 127.0.0.1 until SIGTERM or SIGINT.
struct FixtureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidemark-fixture",
        abstract: "Serve emulated DocuSign, WordPress and REST APIs on 127.0.0.1 for tests and demos.")

    @Option(help: "Port to listen on (0: any free port).") var port: Int = 0
    @Option(help: "Items to seed in each API.") var items: Int = 0
    @Option(help: "Seed of the generated data and of random faults.") var seed: UInt64 = 1
    @Option(help: "Bearer token the APIs require (DocuSign, REST) or accept (WordPress).") var token: String?
    @Option(help: "WordPress application password credentials, USER:PASSWORD.") var basic: String?
    @Option(help: "WordPress site time zone, in seconds east of UTC.") var timezone: Int = 0
    @Option(help: "DocuSign burst limit: requests per 30 s, sent as X-BurstLimit-* (default: off).") var burstLimit: Int?
    @Option(help: "Where the WordPress REST API lives: wp-json, pathinfo (/index.php/wp-json/, found through the home page's Link header) or plain (?rest_route= only).")
    var wordpressRoot: String = "wp-json"
    @Option(help: "PEM file of the server's certificate (chain): serve HTTPS only (with --tls-key).") var tlsCert: String?
    @Option(help: "PEM file of the server's private key (with --tls-cert).") var tlsKey: String?

    func validate() throws {
        guard ["wp-json", "pathinfo", "plain"].contains(wordpressRoot) else {
            throw ValidationError("--wordpress-root takes wp-json, pathinfo or plain")
        }
        if let burstLimit, burstLimit < 1 { throw ValidationError("--burst-limit must be at least 1") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
    }

    func run() async throws {
        var credentials: (user: String, password: String)?
        if let basic {
            let parts = basic.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ValidationError("--basic must be USER:PASSWORD") }
            credentials = (parts[0], parts[1])
        }
        let server = try await FixtureServer.start(port: port, items: items, seed: seed, token: token, basic: credentials,
                                                  tls: tlsCert.map { ($0, tlsKey!) })
        server.setTimezoneOffset(timezone)
        server.setBurstLimit(burstLimit)
        server.setWordPressRoot(wordpressRoot == "pathinfo" ? .pathInfo : wordpressRoot == "plain" ? .plain : .wpJSON)
        FileHandle.standardOutput.write(Data("listening on \(server.baseURL)\n".utf8))
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let signals = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Once()
            for source in signals {
                source.setEventHandler { if once.first() { continuation.resume() } }
                source.resume()
            }
        }
        // A graceful stop can wait on a client's idle keep-alive connection; never let that keep
        // the process (and its port) alive after SIGTERM.
        Task.detached {
            await server.stop()
            Foundation.exit(0)
        }
        try? await Task.sleep(nanoseconds: 3_000_000_000)
        Foundation.exit(0)
    }
}

/// True exactly once.
final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func first() -> Bool { lock.withLock { defer { done = true }; return !done } }
}

do {
    let command = try FixtureCommand.parse()
    try await command.run()
} catch {
    FixtureCommand.exit(withError: error)
}
