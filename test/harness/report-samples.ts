// Reports as mailbox providers and MTAs send them, for the tests of bounce-svc, written after the RFCs' own examples: RFC 3464 appendix
// (a simple DSN from cs.utk.edu, a delayed DSN) and RFC 5965 section 3.5's abuse report. Each takes the VERP
// address of the message it is about and quotes the original with it as Return-Path, as a final MTA does.

function crlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

export interface DsnRecipient {
  action: string;
  status: string;
  diagnostic?: string;
}

/** RFC 3464 appendix A.1 ("Simple DSN"), with the recipient's fields given. */
export function dsn(returnPath: string, recipient: DsnRecipient): string {
  return crlf(`Date: Thu, 7 Jul 1994 17:16:05 -0400
From: Mail Delivery Subsystem <MAILER-DAEMON@CS.UTK.EDU>
Message-Id: <199407072116.RAA14128@CS.UTK.EDU>
Subject: Returned mail: Cannot send message for 5 days
To: <${returnPath}>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
    boundary="RAA14128.773615765/CS.UTK.EDU"

--RAA14128.773615765/CS.UTK.EDU

The original message was received at Sat, 2 Jul 1994 17:10:28 -0400
from root@localhost

   ----- The following addresses had delivery problems -----
<louisl@larry.slip.umd.edu>  (unrecoverable error)

   ----- Transcript of session follows -----
<louisl@larry.slip.umd.edu>... Deferred: Connection timed out
        with larry.slip.umd.edu.
Message could not be delivered for 5 days
Message will be deleted from queue

--RAA14128.773615765/CS.UTK.EDU
content-type: message/delivery-status

Reporting-MTA: dns; cs.utk.edu

Original-Recipient: rfc822;louisl@larry.slip.umd.edu
Final-Recipient: rfc822;louisl@larry.slip.umd.edu
Action: ${recipient.action}
Status: ${recipient.status}
${recipient.diagnostic === undefined ? '' : `Diagnostic-Code: ${recipient.diagnostic}\n`}Last-Attempt-Date: Thu, 7 Jul 1994 17:15:49 -0400

--RAA14128.773615765/CS.UTK.EDU
content-type: message/rfc822

Return-Path: <${returnPath}>
Received: from localhost (root@localhost)
    by cs.utk.edu (8.6.8/2.7c-UTK)
    id RAA14118; Sat, 2 Jul 1994 17:10:28 -0400
Date: Sat, 2 Jul 1994 17:10:28 -0400
From: root@cs.utk.edu
Message-Id: <199407022110.RAA14118@cs.utk.edu>
To: louisl@larry.slip.umd.edu
Subject: Hello

Hello, Louis.
--RAA14128.773615765/CS.UTK.EDU--
`);
}

/** RFC 5965 section 3.5's example (an abuse report), the original sent with `returnPath`. */
export function arf(returnPath: string, feedbackType = 'abuse'): string {
  return crlf(`From: <abusedesk@example.com>
Date: Thu, 8 Mar 2005 17:40:36 EDT
Subject: FW: Earn money
To: <abuse@example.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
     boundary="part1_13d.2e68ed54_boundary"

--part1_13d.2e68ed54_boundary
Content-Type: text/plain; charset="US-ASCII"
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP
192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.  For more information
about this format please see http://www.mipassoc.org/arf/.

--part1_13d.2e68ed54_boundary
Content-Type: message/feedback-report

Feedback-Type: ${feedbackType}
User-Agent: SomeGenerator/1.0
Version: 1
Original-Mail-From: <${returnPath}>
Original-Rcpt-To: <user@example.com>
Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT
Reporting-MTA: dns; mail.example.com
Source-IP: 192.0.2.1
Authentication-Results: mail.example.com;
               spf=fail smtp.mail=somespammer@example.com
Reported-Domain: example.net
Reported-Uri: http://example.net/earn_money.html
Reported-Uri: mailto:user@example.com
Removal-Recipient: user@example.com

--part1_13d.2e68ed54_boundary
Content-Type: message/rfc822
Content-Disposition: inline

Return-Path: <${returnPath}>
From: <somespammer@example.net>
Received: from mailserver.example.net (mailserver.example.net
        [192.0.2.1]) by example.com with ESMTP id M63d4137594e46;
        Thu, 08 Mar 2005 14:00:00 -0400
To: <Undisclosed Recipients>
Subject: Earn money
MIME-Version: 1.0
Content-type: text/plain
Message-ID: 8787KJKJ3K4J3K4J3K4J3.mail@example.net
Date: Thu, 02 Sep 2004 12:31:03 -0500

Spam Spam Spam
Spam Spam Spam
Spam Spam Spam
Spam Spam Spam
--part1_13d.2e68ed54_boundary--
`);
}
