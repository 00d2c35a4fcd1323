/**
 * The settings that give a server the App: its id, key and webhook secret, the (fake) API's
 * address, and github.com as the host its repositories are on (the fake answers at 127.0.0.1).
 */
export function gitHubAppEnv(
  apiUrl: string,
  app: { id: number; privateKey: string; webhookSecret: string },
): Record<string, string> {
  return {
    MAINLINE_GITHUB_APP_ID: String(app.id),
    MAINLINE_GITHUB_PRIVATE_KEY: app.privateKey,
    MAINLINE_GITHUB_WEBHOOK_SECRET: app.webhookSecret,
    MAINLINE_GITHUB_API_URL: apiUrl,
    MAINLINE_GITHUB_HOST: "github.com",
  };
}
