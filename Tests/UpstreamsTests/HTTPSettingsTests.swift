import Foundation
import Testing
@testable import Upstreams

@Suite struct HTTPSettingsTests {
    @Test func optionsSetAttemptsAndTimeout() throws {
        let defaults = try HTTPSettings().applying([:])
        #expect(defaults.maxAttempts == 5 && defaults.requestTimeout == 120)
        let tuned = try HTTPSettings().applying(["maxAttempts": "2", "timeout": "15"])
        #expect(tuned.maxAttempts == 2)
        #expect(tuned.requestTimeout == 15 && tuned.readTimeout == 15)
        #expect(try defaults.maxListedItems == 1_000_000 && HTTPSettings().applying(["maxItems": "7"]).maxListedItems == 7)
        for (key, value, max) in [("maxAttempts", "0", 20), ("maxAttempts", "21", 20), ("timeout", "soon", 3600), ("timeout", "-1", 3600),
                                  ("maxItems", "0", 100_000_000), ("maxItems", "100000001", 100_000_000)] {
            #expect {
                _ = try HTTPSettings().applying([key: value])
            } throws: { error in
                (error as? UpstreamError)?.description == "option \(key) must be a whole number from 1 to \(max), got '\(value)'"
            }
        }
    }

    /// The option names the certificates; without it OpenSSL's variables do, as OpenSSL reads
    /// them: both the file and the folders (`:`-separated), those that exist.
    @Test func certificatesComeFromTheOptionThenOpenSSLsVariables() throws {
        let folder = NSTemporaryDirectory() + "tidemark-trust-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder + "/certs", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = FileManager.default.createFile(atPath: folder + "/ca.pem", contents: Data())
        let file = folder + "/ca.pem", certs = folder + "/certs"
        let both = ["SSL_CERT_FILE": file, "SSL_CERT_DIR": "\(folder)/missing:\(certs)"]
        #expect(try HTTPSettings().applying([:], environment: both).trustedCertificates
                == TrustedCertificates(path: file, source: "SSL_CERT_FILE", folders: [certs]))
        #expect(try HTTPSettings().applying([:], environment: ["SSL_CERT_FILE": folder + "/missing.pem", "SSL_CERT_DIR": certs])
                .trustedCertificates == TrustedCertificates(path: certs, source: "SSL_CERT_DIR"))
        #expect(try HTTPSettings().applying(["sslCAInfo": "/etc/corp.pem"], environment: both).trustedCertificates
                == TrustedCertificates(path: "/etc/corp.pem", source: "tidemark.sslCAInfo"))
        #expect(try HTTPSettings().applying([:], environment: ["SSL_CERT_FILE": ""]).trustedCertificates == nil)
        // The failure names them, and where they were named; the system's store gets advice.
        struct Described: Error, CustomStringConvertible { let description: String }
        let untrusted = Described(description: "handshakeFailed(CERTIFICATE_VERIFY_FAILED)")
        let fromEnvironment = TrustedCertificates(path: file, source: "SSL_CERT_FILE", folders: [certs])
        #expect(HTTPSession.transportFailure(untrusted, trusting: fromEnvironment).text == "the server's TLS certificate could not be verified "
                + "against the certificates in \(file) (SSL_CERT_FILE) and in \(certs) (SSL_CERT_DIR): expired, self-signed, or issued by "
                + "an authority not among them (name its certificate in tidemark.sslCAInfo: clone --option sslCAInfo=<file.pem>, "
                + "or git config tidemark.sslCAInfo <file.pem> in a mirror)")
        #expect(HTTPSession.transportFailure(untrusted).text.hasSuffix("or git config tidemark.sslCAInfo <file.pem> in a mirror)"))
    }

    @Test func factoryRejectsBadHTTPOptions() {
        #expect(throws: UpstreamError.self) {
            _ = try UpstreamFactory.make(UpstreamConfiguration(spec: "rest:https://example.org/items", options: ["maxAttempts": "x"]))
        }
    }
    /// The proxy is chosen as curl chooses it: by the URL's scheme, `HTTP_PROXY` passed over
    /// (a CGI server sets it from a request), `all_proxy` last, none for this machine or a host
    /// `no_proxy` names (itself or a domain above it).
    @Test func theProxyIsChosenAsCurlChoosesIt() throws {
        let site = try #require(URL(string: "https://api.example.org/v1/items"))
        let plain = try #require(URL(string: "http://api.example.org/v1/items"))
        func chosen(_ url: URL, _ environment: [String: String]) throws -> String? {
            try ProxyChoice.forURL(url, environment: environment).map { "\($0.variable) \($0.address)" }
        }
        #expect(try chosen(site, ["https_proxy": "proxy.corp:3128", "http_proxy": "other:1"]) == "https_proxy proxy.corp:3128")
        #expect(try chosen(site, ["HTTPS_PROXY": "http://u:p@proxy.corp"]) == "HTTPS_PROXY proxy.corp:1080")
        #expect(try chosen(plain, ["HTTP_PROXY": "proxy.corp:3128"]) == nil)
        #expect(try chosen(plain, ["HTTP_PROXY": "x:1", "ALL_PROXY": "socks5://gate:1081"]) == "ALL_PROXY gate:1081")
        for exceptions in ["example.org", ".example.org", "other, api.example.org:443", "*"] {
            #expect(try chosen(site, ["https_proxy": "proxy.corp:3128", "no_proxy": exceptions]) == nil, "\(exceptions)")
        }
        #expect(try chosen(site, ["https_proxy": "proxy.corp:3128", "no_proxy": "ample.org"]) == "https_proxy proxy.corp:3128")
        #expect(try chosen(try #require(URL(string: "http://127.0.0.1:8080/x")), ["http_proxy": "proxy.corp:3128"]) == nil)
        #expect { try chosen(site, ["https_proxy": "https://proxy.corp"]) } throws: { error in
            (error as? UpstreamError)?.description.contains("https_proxy names no proxy tidemark can use: a https:// proxy") == true
        }
        #expect { try chosen(site, ["https_proxy": "proxy.corp:99999"]) } throws: { error in
            (error as? UpstreamError)?.description.contains("port 99999 is out of range") == true
        }
        // Credentials are decoded (`%40` is `@`); a `%` starting no escape stays a `%`.
        let proxy = try #require(try ProxyChoice.forURL(site, environment: ["https_proxy": "http://me%40corp:p%ZZw@proxy.corp:3128"]))
        #expect(proxy.configuration.authorization == .basic(username: "me@corp", password: "p%ZZw"))
    }
}
