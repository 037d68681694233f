import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Gives every response the `Date` of the moment the fixture made its answer.
///
/// Hummingbird stamps each response with a date it refreshes once a second, and it overwrites a
/// `Date` the responder set. A loaded test run saw that date tens of seconds behind, and the
/// DocuSign burst and rate limits, whose resets a client measures against `Date`, then announced
/// waits that much longer. The responder sends its date as ``field``; this handler, on the
/// channel after Hummingbird, moves it into `Date`.
final class AnswerDateHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The header the responder's date travels in to this handler.
    static let field = HTTPField.Name("X-Fixture-Answer-Date")!

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var part = unwrapOutboundIn(data)
        if case .head(var head) = part, let date = head.headerFields[Self.field] {
            head.headerFields[Self.field] = nil
            head.headerFields[.date] = date
            part = .head(head)
        }
        context.write(wrapOutboundOut(part), promise: promise)
    }
}
