/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Go's //go:embed skips files whose names start with "." or "_", so every
// emitted file gets a name that starts with a letter.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      output: {
        entryFileNames: 'assets/app-[hash].js',
        chunkFileNames: 'assets/chunk-[hash].js',
        assetFileNames: 'assets/asset-[hash][extname]',
      },
    },
  },
  server: {
    proxy: {
      '/api': { target: 'http://127.0.0.1:8080', ws: true },
      '/login': { target: 'http://127.0.0.1:8080' },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    // Loopback socket tests wait for real reconnects; generous on a busy machine.
    testTimeout: 30_000,
  },
});
