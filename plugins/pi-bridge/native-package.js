// The pi extension of a native package made by `pi-hooks pack` (written into the package as
// `pi-extension.js`): it runs the package's native plugin inside pi through the pi-hooks
// bridge of the `pi-hooks` npm package, which the package depends on (npm installs it beside
// the package; pi-hooks' own npm package brings the prebuilt binary for the platform).
//
// However many native packages pi loads, one bridge runs and one `pi-hooks serve` with it:
// the first copy of the bridge to load starts it and keeps itself in `globalThis`, and the
// other packages find it there and do not even load their copies (index.ts does the same
// check). That serve loads the native plugins of every package in pi's settings, checking
// each one's library for this platform, its SHA-256 and its ABI, as every pi-hooks host does.
const ACTIVE = Symbol.for("pi-hooks.bridge");

/** Whether a bridge of pi's current extensions already runs in this process (index.ts keeps
 * it in `globalThis`; the API of one a reload or a session switch replaced throws). */
function bridgeRunning() {
	const active = globalThis[ACTIVE];
	if (!active) return false;
	try {
		active.pi.getFlag("pi-hooks-bridge-probe");
		return true;
	} catch {
		return false;
	}
}

export default async function nativePackage(pi) {
	// The bridge that runs already loads this package's plugin: its own copy of the bridge (one
	// per package installed from npm) is not even compiled, which would cost pi's start a
	// TypeScript load per package.
	if (bridgeRunning()) return;
	let bridge;
	try {
		bridge = (await import("pi-hooks/bridge/index.ts")).default;
	} catch (error) {
		// Installed without its dependencies (a folder, or `pi-hooks install` of a .tgz): a
		// bridge loaded from elsewhere (`pi install npm:pi-hooks`, `pi-hooks bridge install`)
		// runs the plugin; without one, say how to get it.
		pi.on("session_start", (_event, ctx) => {
			if (globalThis[ACTIVE]) return;
			ctx.ui.notify(
				`pi-hooks: a native package is installed, but the pi-hooks bridge that runs it is not (${error.message}). Install it with "pi install npm:pi-hooks".`,
				"warning",
			);
		});
		return;
	}
	await bridge(pi);
}
