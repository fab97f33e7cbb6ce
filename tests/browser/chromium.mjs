// SPDX-License-Identifier: MIT
// Shared by the browser tests: result lines in the e2e protocol, and Debian's chromium
// (found on PATH) launched headless through playwright-core with a fresh profile.
// Nothing here downloads a browser.
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

let failures = 0;
export const ok = (m) => console.log(`ok: ${m}`);
export const fail = (m) => { console.log(`FAIL: ${m}`); failures++; };
export const check = (cond, good, bad) => (cond ? ok(good) : fail(bad));
export const failed = () => failures;

function onPath(names) {
	for (const dir of (process.env.PATH || '').split(delimiter)) {
		for (const name of names) {
			const p = join(dir || '.', name);
			try {
				accessSync(p, constants.X_OK);
				return p;
			} catch { /* not here */ }
		}
	}
	return null;
}

// The browser, or a printed "skip:" line and exit 0 when it cannot run here (what says
// what is missing).  Returns {context, close}; close() also removes the profile.
export async function launch(what, extraArgs = []) {
	const chromium = onPath(['chromium', 'chromium-browser']);
	if (!chromium) {
		console.log(`skip: chromium not found on PATH (Debian package chromium): ${what} not opened in a browser`);
		process.exit(0);
	}
	let playwright;
	try {
		playwright = await import('playwright-core');
	} catch (e) {
		console.log(`skip: playwright-core not installed (npm ci in tests/browser): ${e.code || e.message}`);
		process.exit(0);
	}
	const profileDir = mkdtempSync(join(tmpdir(), 'stackpulse-chromium.'));
	const close = async (context) => {
		if (context)
			await context.close();
		rmSync(profileDir, { recursive: true, force: true });
	};
	try {
		// A persistent context is how playwright takes a user data dir: a fresh one per run.
		const context = await playwright.chromium.launchPersistentContext(profileDir, {
			executablePath: chromium,
			headless: true,
			args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
				'--disable-background-networking', '--disable-component-update', '--disable-sync',
				...extraArgs],
			viewport: { width: 1200, height: 900 },
			timeout: 60000,
		});
		return { context, close: () => close(context) };
	} catch (e) {
		await close(null);
		console.log(`skip: chromium did not start under playwright-core: ${String(e.message).split('\n')[0]}`);
		process.exit(0);
	}
}

// Every request a page makes, to show that nothing left the machine's files.
export function watch(page) {
	const errors = [], requests = [];
	page.on('pageerror', (e) => errors.push(e.message));
	page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
	page.on('request', (r) => requests.push(r.url()));
	return { errors, requests, outside: () => requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')) };
}
