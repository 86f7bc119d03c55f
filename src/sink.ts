// A provider address of the form `sink:` (orgs' sms.base_url and email.smtp_url, webhooks' url):
// the call succeeds inside the process without any network, and is recorded like a real one. It is
// data, not a switch: only what a provisioning file names as `sink:` is sunk (the demo's file does;
// a real installation's never needs to), so nothing else can be silenced by a setting.
export const SINK = "sink:";

export const isSink = (address: unknown): boolean => address === SINK;
