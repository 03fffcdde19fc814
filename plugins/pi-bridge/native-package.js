// The pi extension of a native package made by `pi-hooks pack` (written into the package as
// `pi-extension.js`): it runs the package's native plugin inside pi through the pi-hooks
// bridge of the `pi-hooks` npm package, which the package depends on (npm installs it beside
// the package; pi-hooks' own npm package brings the prebuilt binary for the platform).
//
// However many native packages pi loads, one bridge runs and one `pi-hooks serve` with it:
// the first copy of the bridge to load starts it and keeps itself in `globalThis`, and the
// others find it there and do nothing (index.ts). That serve loads the native plugins of every
// package in pi's settings, checking each one's library for this platform, its SHA-256 and
// its ABI, as every pi-hooks host does.
const ACTIVE = Symbol.for("pi-hooks.bridge");

export default async function nativePackage(pi) {
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
