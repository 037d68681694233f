// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "tidemark",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tidemark", targets: ["tidemark"]),
        .executable(name: "tidemark-fixture", targets: ["tidemark-fixture"]),
        .library(name: "Tidemark", targets: ["Tidemark"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // The C library, found through pkg-config. Only GitStore imports it.
        .systemLibrary(
            name: "CLibGit2",
            pkgConfig: "libgit2",
            providers: [.apt(["libgit2-dev"]), .brew(["libgit2"])]
        ),
        // libdeflate: whole-buffer zlib streams, about twice as fast as zlib's at level 1 (four
        // times on 17 KB trees) and a little smaller.
        .systemLibrary(
            name: "CLibDeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"]), .brew(["libdeflate"])]
        ),
        // The pack file format's small pieces libgit2 does not export: entry encoding (zlib streams
        // from libdeflate), SHA-1 (object ids, pack trailers), an odb backend that keeps written
        // objects in memory to pack them, and one that serves a sync's trees to its checkout.
        // GitStore writes the packs it builds, and their indexes, itself.
        .target(name: "CPackFormat", dependencies: ["CLibGit2", "CLibDeflate"]),
        // Thin, safe wrapper over the libgit2 calls tidemark uses.
        .target(name: "GitStore", dependencies: ["CLibGit2", "CPackFormat"]),
        // Upstream protocol and adapters (dir, docusign, wordpress, rest).
        .target(
            name: "Upstreams",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The mirror engine.
        .target(name: "Tidemark", dependencies: ["GitStore", "Upstreams"]),
        // The command-line tool.
        .executableTarget(
            name: "tidemark",
            dependencies: [
                "Tidemark",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A real HTTP server emulating the upstream APIs, for tests, demo and benchmarks.
        .target(
            name: "TidemarkFixtures",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The response parts a channel handler sees (AnswerDateHandler).
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
        .executableTarget(
            name: "tidemark-fixture",
            dependencies: [
                "TidemarkFixtures",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The library example of Examples/OfflineCache (built by `swift build`, run by the tests).
        .executableTarget(name: "tidemark-example", dependencies: ["Tidemark"], path: "Examples/OfflineCache"),
        // Helpers shared by the test targets (scratch folders, running git to prove interoperability).
        .target(name: "TestSupport", path: "Sources/TestSupport"),
        .testTarget(name: "GitStoreTests", dependencies: ["GitStore", "CPackFormat", "TestSupport"]),
        .testTarget(name: "UpstreamsTests", dependencies: ["Upstreams", "TidemarkFixtures"]),
        .testTarget(name: "TidemarkTests", dependencies: ["Tidemark", "GitStore", "Upstreams", "TestSupport", "TidemarkFixtures"]),
        .testTarget(name: "EndToEndTests", dependencies: ["TidemarkFixtures", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
